"""Teams in the admin layer, on SQLite and PostgreSQL (docs/teams.md): roles and what
each may do, team keys paid by the team's wallet, a removed member's keys stopping at
once through the key cache, usage rows carrying the team, and clean books."""

from __future__ import annotations

import json

import attrs
import pytest

from gateway_core.admin import Admin, Caches, Conflict, Forbidden, Invalid, NotFound
from gateway_core.admin import team_keys, teams, usage_export, users, wallet
from gateway_core.config import Config
from gateway_core.request.key_cache import KeyCache
from gateway_core.runtime.plugins import collect
from gateway_core.testing import fake_plugin
from gateway_core.records import UsageFilter, UsageRow
from gateway_core.secrets import hash_key
from gateway_core.testing.stores import admin_ports

HOUR = 3600.0


@attrs.frozen
class As:
    user_id: int
    is_admin: bool = False


@pytest.fixture
def registry(db_url):
    return collect(Config(db_path=db_url, load=()), [fake_plugin])  # the kit's channel type "fake"


@pytest.fixture
async def store(registry, start_store):
    return await start_store(registry.migrations)


@pytest.fixture
async def admin(registry, store):
    return Admin(admin_ports(store)[0], registry.channel_types, Caches(keys=KeyCache(store, ttl=HOUR)))


@pytest.fixture
async def world(admin):
    """Team eng (groups default, vip) with a lead, a member and a viewer; team ops with its
    own lead; an outsider; a site admin who is in no team."""
    people = {name: await users.create_user(admin, name, groups=("default",)) for name in ("lead", "dev", "watcher", "other", "outsider")}
    people["root"] = await users.create_user(admin, "root", is_admin=True)
    eng = await teams.create_team(admin, "eng", groups=("default", "vip"))
    ops = await teams.create_team(admin, "ops")
    await teams.set_member(admin, eng.id, people["lead"].id, "admin")
    await teams.set_member(admin, eng.id, people["dev"].id, "member")
    await teams.set_member(admin, eng.id, people["watcher"].id, "viewer")
    await teams.set_member(admin, ops.id, people["other"].id, "admin")
    callers = {name: As(user.id, user.is_admin) for name, user in people.items()}
    return eng, ops, callers


async def test_a_team_has_its_own_wallet_and_groups(admin, world):
    eng, _, who = world
    assert await teams.topup_team(admin, eng.id, 5_000_000, "budget") == 5_000_000
    view = await teams.team_view(admin, eng.id, caller=who["watcher"])
    assert view.account.balance_micros == 5_000_000 and view.account.groups == ("default", "vip")
    assert view.role == "viewer" and [m.user_name for m in view.members] == ["dev", "lead", "watcher"]
    lead = await users.get_user(admin, who["lead"].user_id)
    assert lead.balance_micros == 0  # a team's money never touches a member's
    assert "team:eng" not in [item.user.name for item in await users.list_users(admin)]  # wallets are not people
    assert (await wallet.check_ledger(admin)).ok


async def test_only_a_site_admin_creates_edits_tops_up_and_deletes_teams(admin, world):
    eng, _, who = world
    for caller in ("lead", "dev", "watcher", "outsider"):
        with pytest.raises(Forbidden, match="Only a site admin"):
            await teams.create_team(admin, f"new-{caller}", caller=who[caller])
    for caller in ("lead", "dev", "watcher"):  # in the team, not allowed
        with pytest.raises(Forbidden, match="Only a site admin"):
            await teams.edit_team(admin, eng.id, limits={"daily_budget_micros": 10**9}, caller=who[caller])
        with pytest.raises(Forbidden):
            await teams.topup_team(admin, eng.id, 1, caller=who[caller])
        with pytest.raises(Forbidden):
            await teams.delete_team(admin, eng.id, caller=who[caller])
    for caller in ("other", "outsider"):  # not in the team: it is not found
        with pytest.raises(NotFound, match="no team with id"):
            await teams.edit_team(admin, eng.id, name="mine", caller=who[caller])
    view = await teams.edit_team(admin, eng.id, name="platform", closed=("vip",), limits={"rpm": 60, "daily_budget_micros": 5_000_000}, caller=who["root"])
    assert view.team.name == "platform" and view.account.name == "team:platform" and view.account.groups == ("default",)
    assert view.limits["rpm"] == 60 and view.limits["daily_budget_micros"] == 5_000_000
    with pytest.raises(Conflict, match="already exists"):
        await teams.create_team(admin, "ops")
    with pytest.raises(Invalid, match="team must not contain spaces"):
        await teams.create_team(admin, "two words")
    with pytest.raises(Invalid, match="name must not start with 'team:'"):
        await users.create_user(admin, "team:ops")
    wallet_id = (await teams.team_view(admin, eng.id)).account.id
    with pytest.raises(Invalid, match="is a team's wallet: it cannot have a password"):
        await users.set_password(admin, wallet_id, "long enough password")
    with pytest.raises(Invalid, match="is a team's wallet: it cannot be a site admin"):
        await users.set_role(admin, wallet_id, True)


async def test_who_sees_which_team(admin, world):
    eng, ops, who = world
    assert [(t.name, r) for t, r in await teams.list_teams(admin, caller=who["dev"])] == [("eng", "member")]
    assert [t.name for t, _ in await teams.list_teams(admin, caller=who["root"])] == ["eng", "ops"]
    assert await teams.list_teams(admin, caller=who["outsider"]) == []
    with pytest.raises(NotFound):
        await teams.team_view(admin, ops.id, caller=who["lead"])  # a team admin cannot see another team
    with pytest.raises(NotFound):
        await teams.find_team(admin, "ops", caller=who["lead"])
    with pytest.raises(NotFound):
        await teams.team_usage(admin, ops.id, caller=who["outsider"])


async def test_members_are_managed_by_the_teams_admin_only(admin, world):
    eng, ops, who = world
    newbie = await users.create_user(admin, "newbie")
    for caller in ("dev", "watcher"):
        with pytest.raises(Forbidden, match="team admin"):
            await teams.set_member(admin, eng.id, newbie.id, "member", caller=who[caller])
    with pytest.raises(NotFound):
        await teams.set_member(admin, eng.id, newbie.id, "member", caller=who["other"])
    member = await teams.set_member(admin, eng.id, newbie.id, "member", caller=who["lead"])
    assert (member.user_name, member.role) == ("newbie", "member")
    with pytest.raises(Invalid, match="role must be one of admin, member, viewer"):
        await teams.set_member(admin, eng.id, newbie.id, "owner", caller=who["lead"])
    account = (await teams.team_view(admin, ops.id)).account
    with pytest.raises(Invalid, match="is a team's account"):
        await teams.set_member(admin, eng.id, account.id, "member")
    # a user may be in several teams
    await teams.set_member(admin, ops.id, newbie.id, "viewer", caller=who["other"])
    assert [(t.name, r) for t, r in await teams.list_teams(admin, caller=As(newbie.id))] == [("eng", "member"), ("ops", "viewer")]


async def test_team_keys_by_role(admin, world):
    eng, _, who = world
    service, secret = await team_keys.create_team_key(admin, eng.id, service=True, name="ci", group="vip", caller=who["lead"])
    assert service.member_id is None and service.team_id == eng.id and service.group == "vip"
    mine, _ = await team_keys.create_team_key(admin, eng.id, name="laptop", caller=who["dev"])
    assert mine.member_id == who["dev"].user_id and mine.user_id == eng.account_id
    with pytest.raises(Forbidden, match="team admin"):
        await team_keys.create_team_key(admin, eng.id, service=True, caller=who["dev"])
    with pytest.raises(Forbidden):
        await team_keys.create_team_key(admin, eng.id, caller=who["watcher"])
    with pytest.raises(NotFound):
        await team_keys.create_team_key(admin, eng.id, caller=who["other"])
    with pytest.raises(Invalid, match="'gold' is not one of the groups of team 'eng'"):
        await team_keys.create_team_key(admin, eng.id, group="gold", caller=who["dev"])
    assert [k.name for k in await team_keys.list_team_keys(admin, eng.id, caller=who["dev"])] == ["laptop"]
    assert [k.name for k in await team_keys.list_team_keys(admin, eng.id, caller=who["lead"])] == ["ci", "laptop"]
    with pytest.raises(NotFound):  # a member cannot touch the team's service key
        await team_keys.delete_team_key(admin, eng.id, service.id, caller=who["dev"])
    # a site admin's cap binds the team: its admin may tighten, never loosen it
    await team_keys.set_team_key_limits(admin, eng.id, service.id, {"daily_budget_micros": 1_000_000}, caller=who["root"])
    with pytest.raises(Invalid, match="operator"):
        await team_keys.set_team_key_limits(admin, eng.id, service.id, {"daily_budget_micros": 2_000_000}, caller=who["lead"])
    _, stored = await team_keys.set_team_key_limits(admin, eng.id, service.id, {"daily_budget_micros": 500_000}, caller=who["lead"])
    assert stored["daily_budget_micros"] == 500_000
    assert (await admin.caches.keys.get(hash_key(secret))).budgets.daily == 500_000


async def test_a_removed_or_demoted_member_s_keys_stop_at_once(admin, world):
    eng, _, who = world
    _, secret = await team_keys.create_team_key(admin, eng.id, name="laptop", caller=who["dev"])
    _, service_secret = await team_keys.create_team_key(admin, eng.id, service=True, name="ci")
    cache = admin.caches.keys
    assert (await cache.get(hash_key(secret))).user_enabled
    await teams.set_member(admin, eng.id, who["dev"].user_id, "viewer", caller=who["lead"])
    assert not (await cache.get(hash_key(secret))).user_enabled  # viewers have no keys
    await teams.set_member(admin, eng.id, who["dev"].user_id, "member", caller=who["lead"])
    assert (await cache.get(hash_key(secret))).user_enabled
    await users.set_user_enabled(admin, who["dev"].user_id, False)  # a disabled person's team keys stop too
    assert not (await cache.get(hash_key(secret))).user_enabled
    await users.set_user_enabled(admin, who["dev"].user_id, True)
    await teams.remove_member(admin, eng.id, who["dev"].user_id, caller=who["lead"])
    key = await cache.get(hash_key(secret))
    assert key.deleted and not key.enabled
    assert (await cache.get(hash_key(service_secret))).user_enabled  # a service key outlives every member
    await teams.remove_member(admin, eng.id, who["lead"].user_id)
    assert (await cache.get(hash_key(service_secret))).user_enabled
    await teams.delete_team(admin, eng.id)
    assert (await cache.get(hash_key(service_secret))).deleted


async def test_usage_rows_carry_the_team_and_filter_by_it(admin, store, world):
    eng, _, who = world
    await teams.topup_team(admin, eng.id, 1_000_000)
    key, _ = await team_keys.create_team_key(admin, eng.id, name="laptop", caller=who["dev"])
    solo = await users.create_user(admin, "solo")
    await store.hold(eng.account_id, 5_000, "r1", key.id)
    await store.record(UsageRow(request_id="r1", started_at=1_700_000_000.0, protocol="openai", endpoint="chat",
                                user_id=eng.account_id, key_id=key.id, model="m", status=200, cost_micros=3_000, team_id=eng.id), eng.account_id)  # fmt: skip
    await store.record(UsageRow(request_id="r2", started_at=1_700_000_001.0, protocol="openai", endpoint="chat", user_id=solo.id, status=200), None)
    rows = await admin.store.page_usage(UsageFilter(team_id=eng.id), None, 10)
    assert [(row["request_id"], row["team_id"]) for row in rows] == [("r1", eng.id)]
    total = await teams.team_usage(admin, eng.id, caller=who["watcher"])
    assert (total.requests, total.cost_micros) == (1, 3_000)
    assert (await teams.team_view(admin, eng.id)).account.balance_micros == 997_000
    assert (await wallet.check_ledger(admin)).ok
    exported = [json.loads(line) async for text in usage_export.export_usage(admin, UsageFilter(team_id=eng.id), "jsonl") for line in text.splitlines()]
    assert [(row["request_id"], row["team_id"], row["user"]) for row in exported] == [("r1", eng.id, "team:eng")]


async def test_check_finds_a_member_key_not_paid_by_the_team_and_a_wallet_that_could_sign_in(admin, store, world):
    eng, _, who = world
    key, _ = await team_keys.create_team_key(admin, eng.id, name="laptop", caller=who["dev"])
    assert (await wallet.check_ledger(admin)).ok
    sql = admin_ports(store)[1]
    await sql.execute("UPDATE api_keys SET user_id = ? WHERE id = ?", (who["dev"].user_id, key.id))
    await sql.execute("UPDATE users SET password_hash = 'x' WHERE id = ?", (eng.account_id,))
    report = await wallet.check_ledger(admin)
    assert sorted(problem.check for problem in report.problems) == ["team_key", "team_wallet"]


async def test_a_teams_rate_limits_and_budgets_reach_every_key_of_the_team(admin, world):
    eng, _, who = world
    _, secret = await team_keys.create_team_key(admin, eng.id, name="laptop", caller=who["dev"])
    _, service_secret = await team_keys.create_team_key(admin, eng.id, service=True, name="ci")
    await admin.caches.keys.get(hash_key(secret))
    await teams.edit_team(admin, eng.id, limits={"rpm": 60, "monthly_budget_micros": 9_000_000})
    for found in (secret, service_secret):  # the cache forgot them: the team's limits are the keys' owner's
        key = await admin.caches.keys.get(hash_key(found))
        assert key.user_limits.requests_per_minute == 60 and key.user_budgets.monthly == 9_000_000


async def test_deleting_a_person_ends_their_team_keys_and_memberships(admin, world):
    eng, _, who = world
    key, secret = await team_keys.create_team_key(admin, eng.id, name="laptop", caller=who["dev"])
    await users.delete_user(admin, who["dev"].user_id)
    assert (await admin.caches.keys.get(hash_key(secret))).deleted
    assert "dev" not in [m.user_name for m in (await teams.team_view(admin, eng.id)).members]
    assert await teams.list_teams(admin, caller=who["dev"]) == []
    assert (await wallet.check_ledger(admin)).ok


async def test_usage_by_member_says_who_spent_what(admin, store, world):
    """A team's totals by the member whose key made each request (its service keys: no
    member), for every role of the team; a team one is not in is not found."""
    eng, _, who = world
    await teams.topup_team(admin, eng.id, 1_000_000)
    dev_key, _ = await team_keys.create_team_key(admin, eng.id, name="laptop", caller=who["dev"])
    lead_key, _ = await team_keys.create_team_key(admin, eng.id, name="desk", caller=who["lead"])
    service, _ = await team_keys.create_team_key(admin, eng.id, service=True, name="ci")
    spent = ((dev_key, 3_000), (dev_key, 4_000), (lead_key, 2_000), (service, 1_500))
    for n, (key, cost) in enumerate(spent):
        await store.hold(eng.account_id, 5_000, f"m{n}", key.id)
        await store.record(UsageRow(request_id=f"m{n}", started_at=1_700_000_000.0 + n, protocol="openai", endpoint="chat", user_id=eng.account_id,
                                    key_id=key.id, model="m", status=200, cost_micros=cost, input_tokens=10, team_id=eng.id), eng.account_id)  # fmt: skip
    for caller in ("watcher", "dev", "lead", "root"):
        by_member = await teams.team_usage_by(admin, eng.id, "member", since=1_600_000_000, caller=who[caller])
        assert [(t.label, t.requests, t.cost_micros, t.input_tokens) for t in by_member] == [("dev", 2, 7_000, 20), ("lead", 1, 2_000, 10), (None, 1, 1_500, 10)]
    by_key = await teams.team_usage_by(admin, eng.id, "key", since=1_600_000_000, caller=who["watcher"])
    assert [(t.label, t.cost_micros) for t in by_key] == [("laptop", 7_000), ("desk", 2_000), ("ci", 1_500)]
    for caller in ("outsider", "other"):
        with pytest.raises(NotFound):
            await teams.team_usage_by(admin, eng.id, "member", caller=who[caller])
    with pytest.raises(Invalid):
        await teams.team_usage_by(admin, eng.id, "user", caller=who["lead"])
