"""``/api/v1/fallbacks`` (admin): model fallbacks of groups and keys (see
:mod:`gateway_core.routing.fallbacks`)."""

from __future__ import annotations

from typing import Any

import attrs

from gateway_core.admin import fallbacks
from gateway_core.routing.fallbacks import ModelFallback
from .operation import ApiCall, Operation
from .schema import TIME, array, obj

MODEL_NAME = {"type": "string", "minLength": 1, "maxLength": 200}
FALLBACK = obj(
    {"scope": {"type": "string", "enum": ["group", "key"]}, "owner": {"type": "string"}, "model": {"type": "string"},
     "fallback": {"type": "string"}, "created_at": TIME},
    ("scope", "owner", "model", "fallback"),
)  # fmt: skip
SET_FALLBACK = obj({"fallback": MODEL_NAME}, ("fallback",))
ERRORS = (400, 401, 403, 404)


def fallback_json(record: ModelFallback) -> dict[str, Any]:
    return attrs.asdict(record)


async def list_fallbacks(call: ApiCall) -> list[dict[str, Any]]:
    return [fallback_json(record) for record in await fallbacks.list_fallbacks(call.admin)]


async def set_group_fallback(call: ApiCall) -> dict[str, Any]:
    return await _set(call, group=call.path["name"])


async def set_key_fallback(call: ApiCall) -> dict[str, Any]:
    return await _set(call, key_id=call.path["key_id"])


async def delete_group_fallback(call: ApiCall) -> None:
    await _delete(call, group=call.path["name"])


async def delete_key_fallback(call: ApiCall) -> None:
    await _delete(call, key_id=call.path["key_id"])


async def _set(call: ApiCall, **owner: Any) -> dict[str, Any]:
    model = call.path["model"]
    record = await fallbacks.set_fallback(call.admin, model, call.body["fallback"], **owner)
    await call.audit("fallback.set", f"fallback {record.scope} {record.owner} {record.model}", None, fallback_json(record))
    return fallback_json(record)


async def _delete(call: ApiCall, **owner: Any) -> None:
    model = call.path["model"]
    await fallbacks.remove_fallback(call.admin, model, **owner)
    scope, name = fallbacks.scope_of(owner.get("group"), owner.get("key_id"))
    await call.audit("fallback.delete", f"fallback {scope} {name} {model}", None, None)


OPERATIONS = (
    Operation("GET", "/fallbacks", "List model fallbacks of groups and keys (admin)", "fallbacks", "admin", list_fallbacks, array(FALLBACK)),
    Operation("PUT", "/groups/{name}/fallbacks/{model}", "Serve the model with another when every channel of it fails, for the group's keys (admin)",
              "fallbacks", "admin", set_group_fallback, FALLBACK, body=SET_FALLBACK, errors=ERRORS, text_params=("name", "model")),
    Operation("DELETE", "/groups/{name}/fallbacks/{model}", "Remove a group's model fallback (admin)", "fallbacks", "admin",
              delete_group_fallback, None, status=204, errors=ERRORS, text_params=("name", "model")),
    Operation("PUT", "/keys/{key_id}/fallbacks/{model}", "Serve the model with another when every channel of it fails, for one key (admin)",
              "fallbacks", "admin", set_key_fallback, FALLBACK, body=SET_FALLBACK, errors=ERRORS, text_params=("model",)),
    Operation("DELETE", "/keys/{key_id}/fallbacks/{model}", "Remove a key's model fallback (admin)", "fallbacks", "admin",
              delete_key_fallback, None, status=204, errors=ERRORS, text_params=("model",)),
)  # fmt: skip
