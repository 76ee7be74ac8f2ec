"""``/api/v1/teams``: teams and roles (``docs/teams.md``). Site admins create, change,
top up and delete teams (scope ``admin``); inside a team, its admins manage members
and keys, members their own keys, viewers read its usage, as the admin layer rules
(:mod:`gateway_core.admin.team_access`): a team the caller is not in is 404, a role
that does not allow the operation 403."""

from __future__ import annotations

from typing import Any

import attrs

from gateway_core.admin import team_keys, teams
from gateway_core.admin import usage as usage_ops
from gateway_core.admin.budgets import budgets_of
from gateway_core.admin.teams import TeamView
from gateway_core.money import format_usd
from gateway_core.records import BUDGET_COLUMNS, LIMIT_COLUMNS, UsageFilter
from gateway_core.team_records import ROLES, TeamMember
from .budgets import BUDGETS, budget_answer
from .keys import FIELDS as KEY_FIELDS
from .errors import ApiError
from .operation import ApiCall, Operation, Param
from .schema import ID, NAME, NAMES, TIME, array, budget, micros, obj, rate_limit, usd
from .shapes import KEY, NEW_KEY, EXPIRES, amount_of, key_json, one_amount, parse_expires
from .usage import ROW, row_json

ROLE = {"enum": list(ROLES)}
MEMBER = obj({"user_id": ID, "user_name": {"type": "string"}, "role": ROLE}, ("user_id", "user_name", "role"), closed=False)
LIMITS_SHOWN = {
    **{name: {"type": ["integer", "null"], "minimum": 0} for name in LIMIT_COLUMNS},
    **{name: micros(name.replace("_", " "), nullable=True) for name in BUDGET_COLUMNS},
}
LIMIT_FIELDS = {  # as sent: refused with the admin layer's rule and message, as the CLI's and the console's
    **{name: rate_limit(name) for name in LIMIT_COLUMNS},
    **{name: budget(name.replace("_", " "), in_micros=True) for name in BUDGET_COLUMNS},
}
TEAM = obj(
    {
        "id": ID, "name": {"type": "string"}, "role": {"enum": ["site", *ROLES], "description": "the caller's"},
        "balance": usd("the team's wallet", signed=True), "balance_micros": micros("the team's wallet", signed=True),
        "groups": NAMES, "limits": obj(LIMITS_SHOWN, closed=False), "members": array(MEMBER), "created_at": {"type": ["number", "null"]},
    },
    ("id", "name", "role", "balance", "balance_micros", "groups", "limits", "members"),
    closed=False,
)  # fmt: skip
LISTED = obj({"id": ID, "name": {"type": "string"}, "role": {"enum": ["site", *ROLES]}}, ("id", "name", "role"), closed=False)
CREATE = obj({"name": NAME, "groups": {**NAMES, "minItems": 1}}, ("name",))
RATE_LIMITS = {"rpm": "requests per minute", "tpm": "tokens per minute", "concurrency": "requests in flight at once"}
# a team's own limits: its rate limits refused in the admin layer's words, as the CLI and the console refuse them
TEAM_LIMITS = {**LIMIT_FIELDS, **{name: rate_limit(f"{RATE_LIMITS[name]}, every key of the team together") for name in LIMIT_COLUMNS}}
UPDATE = obj({"name": NAME, "open": NAMES, "close": NAMES, **TEAM_LIMITS})
# required, checked by the admin layer after the team (so a team one is not in is 404 whatever the body)
ADD_MEMBER = obj({"user_id": ID, "role": ROLE})
SET_ROLE = obj({"role": ROLE})
NEW_TEAM_KEY = obj(
    {"service": {"type": "boolean", "description": "the team's own key (team admins): it outlives every member"},
     "name": NAME, "group": NAME, "models": NAMES, "allow_ips": NAMES, "expires_at": EXPIRES,
     "quota": budget("most the key may spend"), "quota_micros": budget("most the key may spend", in_micros=True)},
)  # fmt: skip
KEY_LIMITS = obj(LIMIT_FIELDS)
EDIT_TEAM_KEY = obj({"name": NAME, "models": {**NAMES, "description": "only these models (empty: any of its group's)"},
                     "allow_ips": {**KEY_FIELDS["allow_ips"], "description": "only from these networks (empty: any)"}})  # fmt: skip
TOPUP = one_amount(obj({"amount": usd("the amount"), "amount_micros": micros("the amount"), "note": {"type": ["string", "null"], "maxLength": 500}}))
BALANCE = obj({"team_id": ID, "balance": usd("the wallet after", signed=True), "balance_micros": micros("the wallet after", signed=True)}, ("team_id", "balance", "balance_micros"))
USAGE = obj(
    {"requests": {"type": "integer"}, "errors": {"type": "integer"}, "input_tokens": {"type": "integer"}, "output_tokens": {"type": "integer"},
     "cost": usd("cost"), "cost_micros": micros("cost"), "since": {"type": ["number", "null"]}, "items": array(ROW),
     "members": array(obj(
         {"member": {"type": ["string", "null"], "description": "the member whose keys made the requests; null: the team's service keys"},
          "requests": {"type": "integer"}, "errors": {"type": "integer"}, "input_tokens": {"type": "integer"},
          "output_tokens": {"type": "integer"}, "cost": usd("cost"), "cost_micros": micros("cost")},
         ("member", "requests", "errors", "cost", "cost_micros"), closed=False))},
    ("requests", "errors", "cost", "cost_micros", "items", "members"),
)  # fmt: skip
SPAN = (
    Param("since", {"type": "number", "minimum": 0, "maximum": 1e11}, "from this Unix time (default: all)"),
    Param("until", {"type": "number", "minimum": 0, "maximum": 1e11}, "before this Unix time"),
    Param("limit", {"type": "integer", "minimum": 0, "maximum": 100}, "the latest rows to list (default 20)"),
)


def member_json(member: TeamMember) -> dict[str, Any]:
    return {"user_id": member.user_id, "user_name": member.user_name, "role": member.role}


def view_json(view: TeamView) -> dict[str, Any]:
    return {
        "id": view.team.id, "name": view.team.name, "role": view.role, "balance": format_usd(view.account.balance_micros),
        "balance_micros": view.account.balance_micros, "groups": list(view.account.groups), "limits": view.limits,
        "members": [member_json(m) for m in view.members], "created_at": view.team.created_at,
    }  # fmt: skip


async def list_teams(call: ApiCall) -> list[dict[str, Any]]:
    return [{"id": team.id, "name": team.name, "role": role} for team, role in await teams.list_teams(call.admin, caller=call.principal)]


async def create_team(call: ApiCall) -> dict[str, Any]:
    team = await teams.create_team(call.admin, call.body["name"], groups=call.body.get("groups", ("default",)), caller=call.principal)
    data = view_json(await teams.team_view(call.admin, team.id, caller=call.principal))
    await call.audit("team.create", f"team {team.id}", None, data)
    return data


async def get_team(call: ApiCall) -> dict[str, Any]:
    return view_json(await teams.team_view(call.admin, call.path["team_id"], caller=call.principal))


async def update_team(call: ApiCall) -> dict[str, Any]:
    team_id, body = call.path["team_id"], call.body
    limits = {name: body[name] for name in TEAM_LIMITS if name in body}
    before = await teams.team_view(call.admin, team_id, caller=call.principal)
    after = await teams.edit_team(
        call.admin, team_id, name=body.get("name"), opened=body.get("open", ()), closed=body.get("close", ()), limits=limits, caller=call.principal
    )
    await call.audit("team.update", f"team {team_id}", view_json(before), view_json(after))
    return view_json(after)


async def delete_team(call: ApiCall) -> None:
    team = await teams.delete_team(call.admin, call.path["team_id"], caller=call.principal)
    await call.audit("team.delete", f"team {team.id}", {"id": team.id, "name": team.name}, None)


async def add_member(call: ApiCall) -> dict[str, Any]:
    team_id = call.path["team_id"]
    member = await teams.set_member(call.admin, team_id, call.body.get("user_id"), call.body.get("role", ""), caller=call.principal)
    await call.audit("team.member.add", f"team {team_id}", None, member_json(member))
    return member_json(member)


async def set_role(call: ApiCall) -> dict[str, Any]:
    team_id, user_id = call.path["team_id"], call.path["user_id"]
    member = await teams.set_member(call.admin, team_id, user_id, call.body.get("role", ""), caller=call.principal)
    await call.audit("team.member.role", f"team {team_id}", None, member_json(member))
    return member_json(member)


async def remove_member(call: ApiCall) -> None:
    team_id, user_id = call.path["team_id"], call.path["user_id"]
    await teams.remove_member(call.admin, team_id, user_id, caller=call.principal)
    await call.audit("team.member.remove", f"team {team_id}", {"user_id": user_id}, None)


async def list_team_keys(call: ApiCall) -> list[dict[str, Any]]:
    return [key_json(key) for key in await team_keys.list_team_keys(call.admin, call.path["team_id"], caller=call.principal)]


async def create_team_key(call: ApiCall) -> dict[str, Any]:
    body = call.body
    quota = amount_of(body, "quota", allow_none=True)
    key, secret = await team_keys.create_team_key(
        call.admin, call.path["team_id"], caller=call.principal, service=body.get("service", False), name=body.get("name", "default"),
        group=body.get("group"), quota_micros=quota, expires_at=parse_expires(body.get("expires_at")),
        models=body.get("models", ()), allow_ips=body.get("allow_ips", ()),
    )  # fmt: skip
    data = key_json(key)
    await call.audit("team.key.create", f"key {key.id}", None, data)
    return {"key": data, "secret": secret}


async def set_team_key_limits(call: ApiCall) -> dict[str, Any]:
    team_id, key_id = call.path["team_id"], call.path["key_id"]
    key, stored = await team_keys.set_team_key_limits(call.admin, team_id, key_id, dict(call.body), caller=call.principal)
    await call.audit("team.key.limits", f"key {key_id}", None, stored)
    return key_json(key)


async def update_team_key(call: ApiCall) -> dict[str, Any]:
    team_id, key_id, body = call.path["team_id"], call.path["key_id"], call.body
    before, _ = await team_keys.team_key(call.admin, team_id, key_id, caller=call.principal)
    after = await team_keys.update_team_key(
        call.admin, team_id, key_id, name=body.get("name"), models=body.get("models"), allow_ips=body.get("allow_ips"), caller=call.principal
    )
    await call.audit("team.key.update", f"key {key_id}", key_json(before), key_json(after))
    return key_json(after)


async def delete_team_key(call: ApiCall) -> dict[str, Any]:
    key = await team_keys.delete_team_key(call.admin, call.path["team_id"], call.path["key_id"], caller=call.principal)
    await call.audit("team.key.delete", f"key {key.id}", None, {"deleted": True})
    return key_json(key)


async def topup_team(call: ApiCall) -> dict[str, Any]:
    team_id = call.path["team_id"]
    amount = amount_of(call.body)
    assert amount is not None
    if amount <= 0:
        raise ApiError(400, "amount must be more than zero", field="amount")
    balance = await teams.topup_team(call.admin, team_id, amount, call.body.get("note"), caller=call.principal)
    await call.audit("team.topup", f"team {team_id}", None, {"amount_micros": amount, "balance_micros": balance})
    return {"team_id": team_id, "balance": format_usd(balance), "balance_micros": balance}


async def team_usage(call: ApiCall) -> dict[str, Any]:
    team_id, since, until = call.path["team_id"], call.query.get("since"), call.query.get("until")
    total = await teams.team_usage(call.admin, team_id, since=since, until=until, caller=call.principal)
    limit = call.query.get("limit", 20)
    rows = (await usage_ops.page_usage(call.admin, UsageFilter(team_id=team_id, since=since, until=until), limit=limit)).rows if limit else []
    by_member = await teams.team_usage_by(call.admin, team_id, "member", since=since or 0, until=until, caller=call.principal)
    members = [{"member": t.label, **{k: v for k, v in attrs.asdict(t).items() if k != "label"}, "cost": format_usd(t.cost_micros)} for t in by_member]
    totals = {k: v for k, v in attrs.asdict(total).items() if k != "label"}  # the team's own: no label
    return {**totals, "cost": format_usd(total.cost_micros), "since": since,
            "items": [row_json(usage_ops.for_owner(row)) for row in rows], "members": members}  # fmt: skip


async def team_budgets(call: ApiCall) -> dict[str, Any]:
    view = await teams.team_view(call.admin, call.path["team_id"], caller=call.principal)
    return await budget_answer(call, view.account.id, budgets_of(view.limits))


ONE = "/teams/{team_id}"
TAG = "teams"
E = (400, 401, 403, 404)
OPERATIONS = (
    Operation("GET", "/teams", "The teams you are in, with your role (a site admin: every team)", TAG, "read", list_teams, array(LISTED)),
    Operation("POST", "/teams", "Create a team with its own wallet, opened to groups (admin)", TAG, "admin", create_team, TEAM, body=CREATE, status=201, errors=(400, 401, 403, 409)),
    Operation("GET", ONE, "A team: its wallet, groups, rate limits, budgets and members (any role)", TAG, "read", get_team, TEAM, errors=E),
    Operation("PATCH", ONE, "Rename a team, open or close its groups, set its rate limits and budgets (null clears) (admin)", TAG, "admin", update_team, TEAM, body=UPDATE, errors=(*E, 409)),
    Operation("DELETE", ONE, "Delete a team for good: its keys stop; its wallet, ledger and usage rows stay (admin)", TAG, "admin", delete_team, None, status=204, errors=E),
    Operation("POST", ONE + "/members", "Add a member, or change their role (the team's admins)", TAG, "write", add_member, MEMBER, body=ADD_MEMBER, status=201, errors=E),
    Operation("PATCH", ONE + "/members/{user_id}", "Change a member's role: a viewer's keys stop (the team's admins)", TAG, "write", set_role, MEMBER, body=SET_ROLE, errors=E),
    Operation("DELETE", ONE + "/members/{user_id}", "Take a member out of the team: their keys in it stop at once (the team's admins)", TAG, "write", remove_member, None, status=204, errors=E),
    Operation("GET", ONE + "/keys", "The team's keys: every one for its admins, your own for a member", TAG, "read", list_team_keys, array(KEY), errors=E),
    Operation("POST", ONE + "/keys", "A key paid by the team's wallet: your own as a member, or the team's service key (its admins) (secret in this response only)", TAG, "write", create_team_key, NEW_KEY, body=NEW_TEAM_KEY, status=201, errors=E),
    Operation("PATCH", ONE + "/keys/{key_id}/limits", "A team key's rate limits and budgets: never loosening what a site admin set (the team's admins; a member their own)", TAG, "write", set_team_key_limits, KEY, body=KEY_LIMITS, errors=E),
    Operation("PATCH", ONE + "/keys/{key_id}", "A team key's name, models and allowed networks: never widening what a site admin set (the team's admins; a member their own)", TAG, "write", update_team_key, KEY, body=EDIT_TEAM_KEY, errors=E),
    Operation("DELETE", ONE + "/keys/{key_id}", "Delete a team key (the team's admins; a member their own)", TAG, "write", delete_team_key, KEY, errors=E),
    Operation("POST", ONE + "/topup", "Credit the team's wallet (admin)", TAG, "admin", topup_team, BALANCE, body=TOPUP, errors=E),
    Operation("GET", ONE + "/budgets", "The team's budgets and its keys', and where each window stands (any role)", TAG, "read", team_budgets, BUDGETS, errors=E),
    Operation("GET", ONE + "/usage", "Requests, tokens, cost and errors charged to the team, by member, and its latest rows (any role)", TAG, "read", team_usage, USAGE, query=SPAN, errors=E),
)
