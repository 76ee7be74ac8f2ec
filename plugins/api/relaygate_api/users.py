"""``/api/v1/users``: users for admins (create, search, change groups and role,
disable, delete, reset the console password)."""

from __future__ import annotations

from typing import Any

from gateway_core.admin import users
from gateway_core.records import UserOverview
from .operation import ApiCall, Operation, Param
from .schema import NAME, NAMES, obj, page
from .shapes import USER, user_json

CREATE = obj(
    {"name": NAME, "is_admin": {"type": "boolean"}, "password": {"type": ["string", "null"], "maxLength": 200},
     "groups": {**NAMES, "minItems": 1}},
    ("name",),
)  # fmt: skip
UPDATE = obj({"groups": {**NAMES, "minItems": 1, "description": "the user's groups after the change"}, "is_admin": {"type": "boolean"}})
PASSWORD = obj({"password": {"type": "string", "minLength": 1, "maxLength": 200}}, ("password",))
LISTED = obj({**USER["properties"], "keys": {"type": "integer"}, "has_password": {"type": "boolean"}}, tuple(USER["required"]), closed=False)
SEARCH = (
    Param("q", {"type": "string", "maxLength": 100}, "part of the name, any case"),
    Param("cursor", {"type": "string", "pattern": "^[0-9]{1,18}$"}, "next_cursor of the previous page"),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "users per page (default 50)"),
)


def overview_json(item: UserOverview) -> dict[str, Any]:
    return {**user_json(item.user), "keys": item.keys, "has_password": item.has_password}


async def list_users(call: ApiCall) -> dict[str, Any]:
    after = int(call.query.get("cursor", 0))
    found, more = await users.search_users(call.admin, query=call.query.get("q", ""), after_id=after, limit=call.query.get("limit", 50))
    return {"items": [overview_json(item) for item in found], "next_cursor": str(found[-1].user.id) if more and found else None}


async def create_user(call: ApiCall) -> dict[str, Any]:
    body = call.body
    user = await users.create_user(
        call.admin, body["name"], is_admin=body.get("is_admin", False), password=body.get("password"), groups=body.get("groups", ("default",))
    )
    data = user_json(user)
    await call.audit("user.create", f"user {user.id}", None, data)
    return data


async def get_user(call: ApiCall) -> dict[str, Any]:
    return user_json(await users.get_user(call.admin, call.path["user_id"]))


async def update_user(call: ApiCall) -> dict[str, Any]:
    user_id, body = call.path["user_id"], call.body
    before = await users.get_user(call.admin, user_id)
    after = before
    if "groups" in body:
        wanted = list(dict.fromkeys(body["groups"]))
        closed = [group for group in before.groups if group not in wanted]
        after = await users.change_groups(call.admin, user_id, opened=wanted, closed=closed)
    if "is_admin" in body and body["is_admin"] != after.is_admin:
        after = await users.set_role(call.admin, user_id, body["is_admin"], by=call.user_id)
    await call.audit("user.update", f"user {user_id}", user_json(before), user_json(after))
    return user_json(after)


async def _switch(call: ApiCall, enabled: bool) -> dict[str, Any]:
    user_id = call.path["user_id"]
    before = await users.get_user(call.admin, user_id)
    after = await users.set_user_enabled(call.admin, user_id, enabled, by=call.user_id)
    await call.audit("user.enable" if enabled else "user.disable", f"user {user_id}", user_json(before), user_json(after))
    return user_json(after)


async def enable_user(call: ApiCall) -> dict[str, Any]:
    return await _switch(call, True)


async def disable_user(call: ApiCall) -> dict[str, Any]:
    return await _switch(call, False)


async def delete_user(call: ApiCall) -> dict[str, Any]:
    user_id = call.path["user_id"]
    before = await users.get_user(call.admin, user_id)
    after = await users.delete_user(call.admin, user_id, by=call.user_id)
    await call.audit("user.delete", f"user {user_id}", user_json(before), user_json(after))
    return user_json(after)


async def reset_password(call: ApiCall) -> None:
    user_id = call.path["user_id"]
    await users.set_password(call.admin, user_id, call.body["password"])
    await call.audit("user.password", f"user {user_id}", None, {"password": "changed"})


ONE = "/users/{user_id}"
E = (400, 401, 403, 404)
OPERATIONS = (
    Operation("GET", "/users", "List users, by id, with a name search (admin)", "users", "admin", list_users, page(LISTED), query=SEARCH),
    Operation("POST", "/users", "Create a user (admin)", "users", "admin", create_user, USER, body=CREATE, status=201, errors=(400, 401, 403, 409)),
    Operation("GET", ONE, "Get a user (admin)", "users", "admin", get_user, USER, errors=E),
    Operation("PATCH", ONE, "Change a user's groups or role (admin)", "users", "admin", update_user, USER, body=UPDATE, errors=E),
    Operation("POST", ONE + "/enable", "Enable a user (admin)", "users", "admin", enable_user, USER, errors=E),
    Operation("POST", ONE + "/disable", "Disable a user: their keys, tokens and sessions stop working (admin)", "users", "admin", disable_user, USER, errors=E),
    Operation("DELETE", ONE, "Delete a user for good: keys deleted, tokens revoked, sessions ended; the name, balance, ledger and usage rows stay (admin)", "users", "admin", delete_user, USER, errors=E),
    Operation("POST", ONE + "/password", "Set a user's console password (admin)", "users", "admin", reset_password, None, body=PASSWORD, status=204, errors=E),
)
