"""A team's API keys (``docs/teams.md``): every one is paid by the team's wallet (its
account); a member's key (``member_id``) stops when they leave the team, a service
key (no member) belongs to the team itself and outlives every member.

A member creates, lists and deletes their own keys in the team; a team admin
every key of it, and creates service keys. A key's group must be one of the team's
groups, which only a site admin sets. A team admin's changes to a key's limits are
an owner's (:mod:`.key_locks`): they cannot loosen what a site admin set."""

from __future__ import annotations

from collections.abc import Sequence

from ..records import DEFAULT_GROUP, KeyRecord
from . import keys
from .context import Admin
from .errors import Invalid, NotFound
from .port import LimitChanges
from .rules import check_amount, check_models_served
from .team_access import KEYS, MANAGE, SITE, Caller, team_for
from .users import get_user


async def create_team_key(
    admin: Admin, team_id: int, *, caller: Caller | None = None, service: bool = False, name: str = "default",
    group: str | None = None, quota_micros: int | None = None, expires_at: float | None = None,
    models: Sequence[str] = (), allow_ips: Sequence[str] = (), limits: LimitChanges | None = None,
) -> tuple[KeyRecord, str]:  # fmt: skip
    """A key paid by the team: the team's own (``service``: a team admin or a site
    admin) or the caller's as a member; the key and its secret, shown once."""
    if service:
        team, role = await team_for(admin, team_id, caller, MANAGE, "create the team's service keys")
        member_id = None
    else:
        team, role = await team_for(admin, team_id, caller, KEYS, "create keys in this team")
        if role == SITE or caller is None:
            raise Invalid("a site admin who is not a member creates the team's service keys (service)", "service")
        member_id = caller.user_id
    if quota_micros is not None:
        check_amount(quota_micros, "quota", allow_zero=True)
    account = await get_user(admin, team.account_id)
    if group is None:
        group = DEFAULT_GROUP if DEFAULT_GROUP in account.groups or not account.groups else account.groups[0]
    if group not in account.groups:
        raise Invalid(f"{group!r} is not one of the groups of team {team.name!r} ({', '.join(account.groups) or 'none'})", "group")
    await check_models_served(admin, models, group)
    fields = {"name": name, "group": group, "quota_micros": quota_micros, "expires_at": expires_at,
              "models": list(models), "allow_ips": list(allow_ips), "limits": dict(limits or {})}  # fmt: skip
    return await admin.store.create_team_key(team.account_id, member_id, fields)


async def list_team_keys(admin: Admin, team_id: int, *, caller: Caller | None = None) -> list[KeyRecord]:
    """The team's live keys: every one for a team admin, the caller's own for a member."""
    team, role = await team_for(admin, team_id, caller, KEYS, "list keys of this team")
    listed = await admin.store.list_keys(team.account_id)
    if role in MANAGE:
        return listed
    assert caller is not None
    return [key for key in listed if key.member_id == caller.user_id]


async def team_key(admin: Admin, team_id: int, key_id: int, *, caller: Caller | None = None) -> tuple[KeyRecord, bool]:
    """One live key of the team the caller may change, and whether they act as a site admin."""
    team, role = await team_for(admin, team_id, caller, KEYS, "change keys of this team")
    key = await admin.store.get_key(key_id)
    mine = key is not None and caller is not None and key.member_id == caller.user_id
    if key is None or key.deleted or key.user_id != team.account_id or not (role in MANAGE or mine):
        raise NotFound(f"no API key with id {key_id} in team {team.name!r}")
    return key, role == SITE


async def delete_team_key(admin: Admin, team_id: int, key_id: int, *, caller: Caller | None = None) -> KeyRecord:
    key, site = await team_key(admin, team_id, key_id, caller=caller)
    return await keys.delete_key(admin, key.id, owner=None if site else key.user_id)


async def set_team_key_limits(
    admin: Admin, team_id: int, key_id: int, changes: LimitChanges, *, caller: Caller | None = None
) -> tuple[KeyRecord, dict[str, int | None]]:
    """A team key's rate limits and budgets: a site admin's bind the team (locked),
    a team admin's or its member's may only tighten those."""
    key, site = await team_key(admin, team_id, key_id, caller=caller)
    if not site and key.member_id is None:
        await team_for(admin, team_id, caller, MANAGE, "change the team's service keys")
    return await keys.set_key_limits(admin, key.id, changes, owner=None if site else key.user_id)


async def update_team_key(
    admin: Admin, team_id: int, key_id: int, *, name: str | None = None, models: Sequence[str] | None = None,
    allow_ips: Sequence[str] | None = None, caller: Caller | None = None,
) -> KeyRecord:  # fmt: skip
    """A team key's name, models and allowed networks (``None``: unchanged): a team
    admin's for any key of the team, a member's for their own. A site admin's models
    and networks bind the team (locked); the team's may only narrow those."""
    key, site = await team_key(admin, team_id, key_id, caller=caller)
    if not site and key.member_id is None:
        await team_for(admin, team_id, caller, MANAGE, "change the team's service keys")
    if name is not None and not name.strip():
        raise Invalid("must not be empty", "name")
    return await keys.update_key(
        admin, key.id, name=key.name if name is None else name, quota_micros=key.quota_micros, expires_at=key.expires_at,
        models=key.models if models is None else models, allow_ips=key.allow_ips if allow_ips is None else allow_ips,
        owner=None if site else key.user_id,
    )  # fmt: skip
