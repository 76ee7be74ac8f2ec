"""``/api/v1/keys``: the caller's own relay API keys (an admin creates and lists
another user's under ``/api/v1/users/{user_id}/keys``)."""

from __future__ import annotations

from typing import Any

from gateway_core.admin import keys, users
from gateway_core.money import MAX_MICROS
from .errors import ApiError
from .operation import ApiCall, Operation
from .schema import NAME, NAMES, array, budget, obj, rate_limit
from .shapes import EXPIRES, KEY, NEW_KEY, amount_of, key_json, parse_expires

FIELDS = {
    "name": NAME,
    "group": {"type": "string", "minLength": 1, "maxLength": 100},
    "quota": budget("most the key may spend"),  # refused with the admin layer's message, as the CLI and the console refuse it
    "quota_micros": budget("most the key may spend", in_micros=True),
    "expires_at": EXPIRES,
    "models": NAMES,
    "allow_ips": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 64}, "maxItems": 100},
    **{column: rate_limit(f"the key's own {label}")  # refused with the admin layer's message, as the CLI and the console refuse it
       for column, label in (("rpm", "requests per minute"), ("tpm", "tokens per minute"), ("concurrency", "requests in flight"))},
}  # fmt: skip
LIMITS = ("rpm", "tpm", "concurrency")
CREATE = obj(FIELDS)
UPDATE = obj({name: schema for name, schema in FIELDS.items() if name != "group"})


async def create(call: ApiCall, user_id: int) -> dict[str, Any]:
    body = call.body
    quota = amount_of(body, "quota", allow_none=True)
    if quota is not None and not 0 <= quota <= MAX_MICROS:
        raise ApiError(400, "quota must not be negative", field="quota")
    key, secret = await keys.create_key(
        call.admin, user_id, name=body.get("name", "default"), group=body.get("group"), quota_micros=quota,
        expires_at=parse_expires(body.get("expires_at")), models=body.get("models", ()), allow_ips=body.get("allow_ips", ()),
        limits={column: body[column] for column in LIMITS if column in body},
        owner=call.user_id if user_id == call.user_id else None,  # an admin's key for another user: the operator's limits, locked
    )  # fmt: skip
    data = key_json(key)
    await call.audit("key.create", f"key {key.id}", None, data)
    return {"key": data, "secret": secret}


async def create_key(call: ApiCall) -> dict[str, Any]:
    return await create(call, call.user_id)


async def list_keys(call: ApiCall) -> list[dict[str, Any]]:
    return [key_json(key) for key in await keys.list_keys(call.admin, call.user_id)]


async def get_key(call: ApiCall) -> dict[str, Any]:
    return key_json(await keys.get_key(call.admin, call.path["key_id"], owner=call.user_id))


async def update_key(call: ApiCall) -> dict[str, Any]:
    return await _update(call, call.user_id)


async def update_user_key(call: ApiCall) -> dict[str, Any]:
    """An operator's change to any user's key: what it sets is locked against the key's owner."""
    await _users_key(call)
    return await _update(call, None)


async def _users_key(call: ApiCall) -> None:
    """The key of the path's user (404 for a key of someone else's)."""
    key = await keys.get_key(call.admin, call.path["key_id"])
    if key.user_id != call.path["user_id"]:
        raise ApiError(404, f"user {call.path['user_id']} has no API key with id {key.id}", code="not_found")


async def _update(call: ApiCall, owner: int | None) -> dict[str, Any]:
    key_id, body = call.path["key_id"], call.body
    before = await keys.get_key(call.admin, key_id, owner=owner)
    quota = amount_of(body, "quota", allow_none=True) if ("quota" in body or "quota_micros" in body) else before.quota_micros
    if quota is not None and quota < 0:
        raise ApiError(400, "quota must not be negative", field="quota")
    expires_at = parse_expires(body["expires_at"]) if "expires_at" in body else before.expires_at
    after = await keys.update_key(
        call.admin, key_id, name=body.get("name", before.name), quota_micros=quota, expires_at=expires_at,
        models=body.get("models", before.models), allow_ips=body.get("allow_ips", before.allow_ips), owner=owner,
        limits={column: body[column] for column in LIMITS if column in body}, group=body.get("group") if owner is None else None,
    )  # fmt: skip
    await call.audit("key.update", f"key {key_id}", key_json(before), key_json(after))
    return key_json(after)


async def _switch(call: ApiCall, enabled: bool, owner: int | None = None) -> dict[str, Any]:
    key_id = call.path["key_id"]
    before = await keys.get_key(call.admin, key_id, owner=owner)
    after = await keys.set_key_enabled(call.admin, key_id, enabled, owner=owner)
    await call.audit("key.enable" if enabled else "key.disable", f"key {key_id}", key_json(before), key_json(after))
    return key_json(after)


async def enable_key(call: ApiCall) -> dict[str, Any]:
    return await _switch(call, True, call.user_id)


async def disable_key(call: ApiCall) -> dict[str, Any]:
    return await _switch(call, False, call.user_id)


async def delete_key(call: ApiCall) -> None:
    await _delete(call, call.user_id)


async def _delete(call: ApiCall, owner: int | None) -> None:
    key_id = call.path["key_id"]
    before = await keys.get_key(call.admin, key_id, owner=owner)
    after = await keys.delete_key(call.admin, key_id, owner=owner)
    await call.audit("key.delete", f"key {key_id}", key_json(before), key_json(after))


async def enable_user_key(call: ApiCall) -> dict[str, Any]:
    await _users_key(call)
    return await _switch(call, True)


async def disable_user_key(call: ApiCall) -> dict[str, Any]:
    await _users_key(call)
    return await _switch(call, False)


async def delete_user_key(call: ApiCall) -> None:
    await _users_key(call)
    await _delete(call, None)


async def create_user_key(call: ApiCall) -> dict[str, Any]:
    user = await users.get_user(call.admin, call.path["user_id"])
    return await create(call, user.id)


async def list_user_keys(call: ApiCall) -> list[dict[str, Any]]:
    user = await users.get_user(call.admin, call.path["user_id"])
    return [key_json(key) for key in await keys.list_keys(call.admin, user.id)]


TAG = "keys"
ONE = "/keys/{key_id}"
USERS_ONE = "/users/{user_id}/keys/{key_id}"
OPERATIONS = (
    Operation("GET", "/keys", "List your API keys", TAG, "read", list_keys, array(KEY)),
    Operation("POST", "/keys", "Create an API key (its secret is in this response only)", TAG, "write", create_key, NEW_KEY, body=CREATE, status=201),
    Operation("GET", ONE, "Get one of your API keys", TAG, "read", get_key, KEY, errors=(401, 403, 404)),
    Operation("PATCH", ONE, "Change a key's name, quota, expiry, models, allowed networks or rate limits "
              "(a limit the operator set may be tightened, not loosened: 403 locked)", TAG, "write", update_key, KEY, body=UPDATE, errors=(400, 401, 403, 404)),
    Operation("POST", ONE + "/enable", "Enable a key (not one an operator disabled: 403 locked)", TAG, "write", enable_key, KEY, errors=(401, 403, 404)),
    Operation("POST", ONE + "/disable", "Disable a key", TAG, "write", disable_key, KEY, errors=(401, 403, 404)),
    Operation("DELETE", ONE, "Delete a key (its usage stays in the log)", TAG, "write", delete_key, None, status=204, errors=(401, 403, 404)),
    Operation("GET", "/users/{user_id}/keys", "List a user's API keys (admin)", "users", "admin", list_user_keys, array(KEY), errors=(401, 403, 404)),
    Operation("POST", "/users/{user_id}/keys", "Create an API key for a user (admin)", "users", "admin", create_user_key, NEW_KEY, body=CREATE, status=201, errors=(400, 401, 403, 404)),
    Operation("PATCH", USERS_ONE, "Change any field of a user's key, its group too (admin: what it sets is locked against the owner)", "users", "admin", update_user_key, KEY, body=CREATE, errors=(400, 401, 403, 404)),
    Operation("POST", USERS_ONE + "/enable", "Enable a user's key (admin)", "users", "admin", enable_user_key, KEY, errors=(401, 403, 404)),
    Operation("POST", USERS_ONE + "/disable", "Disable a user's key (admin: locked against its owner)", "users", "admin", disable_user_key, KEY, errors=(401, 403, 404)),
    Operation("DELETE", USERS_ONE, "Delete a user's key (admin; its usage stays in the log)", "users", "admin", delete_user_key, None, status=204, errors=(401, 403, 404)),
)
