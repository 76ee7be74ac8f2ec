"""``/api/v1/signups``: people who signed in through single sign-on while self sign-up
waits for an administrator's approval (``docs/teams.md#self-sign-up``). Site admins
list them and approve (the user is made, in the sign-up's default group, team and
role) or reject them, through the admin layer (:mod:`gateway_core.admin.signups`)."""

from __future__ import annotations

from typing import Any

import attrs

from gateway_core.admin import signups
from gateway_core.team_records import ROLES, SIGNUP_STATES, SignupRecord
from .operation import ApiCall, Operation, Param
from .schema import ID, TIME_OR_NULL, array, obj
from .shapes import USER, user_json

SIGNUP = obj(
    {"id": ID, "name": {"type": "string"}, "team": {"type": "string", "description": "the default team (empty: none)"},
     "role": {"enum": list(ROLES)}, "group": {"type": "string"}, "status": {"enum": list(SIGNUP_STATES)},
     "created_at": TIME_OR_NULL, "decided_at": TIME_OR_NULL},
    ("id", "name", "team", "role", "group", "status"),
    closed=False,
)  # fmt: skip
APPROVED = obj({"signup": SIGNUP, "user": USER}, ("signup", "user"))
STATUS = (Param("status", {"enum": [*SIGNUP_STATES, "all"]}, "the sign-ups in this state (default: pending)"),)


def signup_json(signup: SignupRecord) -> dict[str, Any]:
    return attrs.asdict(signup)


async def list_signups(call: ApiCall) -> list[dict[str, Any]]:
    status = call.query.get("status", "pending")
    listed = await signups.list_signups(call.admin, status=None if status == "all" else status, caller=call.principal)
    return [signup_json(signup) for signup in listed]


async def approve_signup(call: ApiCall) -> dict[str, Any]:
    signup_id = call.path["signup_id"]
    before = await signups.get_signup(call.admin, signup_id, caller=call.principal)
    after, user = await signups.approve_signup(call.admin, signup_id, caller=call.principal)
    await call.audit("user.create", f"user {user.id}", None, user_json(user))
    await call.audit("signup.approve", f"signup {signup_id}", signup_json(before), signup_json(after))
    return {"signup": signup_json(after), "user": user_json(user)}


async def reject_signup(call: ApiCall) -> dict[str, Any]:
    signup_id = call.path["signup_id"]
    before = await signups.get_signup(call.admin, signup_id, caller=call.principal)
    after = await signups.reject_signup(call.admin, signup_id, caller=call.principal)
    await call.audit("signup.reject", f"signup {signup_id}", signup_json(before), signup_json(after))
    return signup_json(after)


TAG = "users"
ONE = "/signups/{signup_id}"
E = (400, 401, 403, 404, 409)
OPERATIONS = (
    Operation("GET", "/signups", "Single sign-on sign-ups waiting for approval, or in another state (admin)", TAG, "admin", list_signups, array(SIGNUP), query=STATUS),
    Operation("POST", ONE + "/approve", "Approve a sign-up: its user is made in the default group, team and role; their next sign-in lands (admin)", TAG, "admin", approve_signup, APPROVED, errors=E),
    Operation("POST", ONE + "/reject", "Reject a sign-up: that person's single sign-on is refused (admin)", TAG, "admin", reject_signup, SIGNUP, errors=E),
)
