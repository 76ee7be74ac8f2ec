"""``/api/v1/channels`` (admin): upstream channels, their upstream keys shown
masked. Create, change, enable, disable, delete, test, and list the models the
channel's upstream offers (:mod:`gateway_core.admin.channel_models`)."""

from __future__ import annotations

from typing import Any

from gateway_core.admin import channel_models, channels
from gateway_core.admin.rules import CHANNEL_NUMBERS, MAX_UPSTREAM_KEY, MAX_UPSTREAM_KEYS
from gateway_core.runtime.jsonable import to_jsonable
from .operation import ApiCall, Operation, Param
from .schema import ID, NAME, NAMES, Schema, array, channel_number, obj

STRINGS = {"type": "object", "additionalProperties": {"type": "string", "maxLength": 2000}, "maxProperties": 50}
# the count is checked by the admin layer, not here: MAX_UPSTREAM_KEYS keys that long would not fit
# in a body (MAX_BODY), and a body too large for the API is a 413 whatever the schema says
API_KEYS = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": MAX_UPSTREAM_KEY},
            "description": f"the upstream keys: at most {MAX_UPSTREAM_KEYS}, each at most {MAX_UPSTREAM_KEY} characters"}
TIMEOUT = {"type": ["number", "null"], "minimum": 0, "maximum": 86400}
FIELDS: dict[str, Schema] = {
    "name": NAME, "type": {"type": "string", "minLength": 1, "maxLength": 100},
    "base_url": {"type": "string", "minLength": 1, "maxLength": 2000}, "api_keys": API_KEYS, "models": NAMES,
    "model_map": STRINGS, "groups": NAMES, **{name: channel_number(name) for name in CHANNEL_NUMBERS},
    "enabled": {"type": "boolean"}, "endpoints": NAMES, "headers": STRINGS, "settings": {"type": "object"},
    "timeout_connect": TIMEOUT, "timeout_first_byte": TIMEOUT, "timeout_idle": TIMEOUT,
}  # fmt: skip
CREATE = obj(FIELDS, ("name", "type", "base_url", "models"))
UPDATE = obj(FIELDS)
CHANNEL = obj(
    {"id": ID, "name": {"type": "string"}, "type": {"type": "string"}, "base_url": {"type": "string"}, "api_keys": NAMES,
     "models": NAMES, "groups": NAMES, "enabled": {"type": "boolean"}, "priority": {"type": "integer"}, "weight": {"type": "integer"}},
    ("id", "name", "type", "base_url", "models", "groups", "enabled"),
    closed=False,
)  # fmt: skip
PROBE = obj(
    {"ok": {"type": "boolean"}, "model": {"type": "string"}, "latency_ms": {"type": "number"}, "message": {"type": "string"},
     "status": {"type": ["integer", "null"]}, "key_index": {"type": ["integer", "null"]}},
    ("ok", "model", "latency_ms", "message"),
)  # fmt: skip
TEST = obj({"model": {"type": "string", "minLength": 1, "maxLength": 200}})
MODEL_IDS = {"type": "array", "items": {"type": "string"}}
UPSTREAM_MODELS = obj(
    {"ok": {"type": "boolean", "description": "false: nothing could be listed, and message says why"},
     "models": {**MODEL_IDS, "description": "the models the upstream offers that the channel's type can serve, in the upstream's order"},
     "new": {**MODEL_IDS, "description": "of models, those the channel does not serve yet"},
     "message": {"type": "string"}, "latency_ms": {"type": "number"},
     "status": {"type": ["integer", "null"], "description": "the upstream's HTTP status when it failed with one"},
     "key_index": {"type": ["integer", "null"]},
     "unpriced": {**MODEL_IDS, "description": "of models, those priced neither by the operator nor by the catalogue: requests to them are refused (403 model_not_priced)"},
     "warning": {"type": ["string", "null"], "description": "when some are unpriced, what to do about it (the words the CLI and the console use)"}},
    ("ok", "models", "new", "message", "latency_ms"),
)  # fmt: skip
DRAFT = obj(
    {**{name: FIELDS[name] for name in ("type", "base_url", "api_keys", "headers", "settings", "timeout_connect", "timeout_first_byte", "timeout_idle")},
     "match": {"type": "string", "minLength": 1, "maxLength": 200}},
    ("type", "base_url"),
)  # fmt: skip
LISTING_QUERY = (
    Param("key", {"type": "integer", "minimum": 0, "maximum": 10000}, "the upstream key to ask with, by position from 0 (default: the first usable)"),
    Param("match", {"type": "string", "minLength": 1, "maxLength": 200}, "only ids matching this shell-style pattern, such as 'chat-*'"),
)


def channel_json(channel: Any) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(channel)
    return data


async def list_channels(call: ApiCall) -> list[dict[str, Any]]:
    return [channel_json(channel) for channel in await channels.list_channels(call.admin)]


async def create_channel(call: ApiCall) -> dict[str, Any]:
    channel = await channels.add_channel(call.admin, call.body)
    await call.audit("channel.create", f"channel {channel.id}", None, channel_json(channel))
    return channel_json(channel)


async def get_channel(call: ApiCall) -> dict[str, Any]:
    return channel_json(await channels.get_channel(call.admin, call.path["channel_id"]))


async def update_channel(call: ApiCall) -> dict[str, Any]:
    channel_id = call.path["channel_id"]
    before = await channels.get_channel(call.admin, channel_id)
    after = await channels.update_channel(call.admin, channel_id, call.body)
    await call.audit("channel.update", f"channel {channel_id}", channel_json(before), channel_json(after))
    return channel_json(after)


async def enable_channel(call: ApiCall) -> dict[str, Any]:
    channel_id = call.path["channel_id"]
    before = await channels.get_channel(call.admin, channel_id)
    after, _ = await channels.enable_channel(call.admin, channel_id)
    await call.audit("channel.enable", f"channel {channel_id}", channel_json(before), channel_json(after))
    return channel_json(after)


async def disable_channel(call: ApiCall) -> dict[str, Any]:
    channel_id = call.path["channel_id"]
    before = await channels.get_channel(call.admin, channel_id)
    after = await channels.disable_channel(call.admin, channel_id)
    await call.audit("channel.disable", f"channel {channel_id}", channel_json(before), channel_json(after))
    return channel_json(after)


async def delete_channel(call: ApiCall) -> None:
    channel_id = call.path["channel_id"]
    before = await channels.delete_channel(call.admin, channel_id)
    await call.audit("channel.delete", f"channel {channel_id}", channel_json(before), None)


async def test_channel(call: ApiCall) -> dict[str, Any]:
    services = call.services
    _, result = await channels.test_channel(
        call.admin, call.path["channel_id"], timeouts=services.config.timeouts, session=services.session,
        request_id=call.request_id, model=call.body.get("model"),
    )  # fmt: skip
    data: dict[str, Any] = to_jsonable(result)
    return data


async def upstream_models(call: ApiCall) -> dict[str, Any]:
    services = call.services
    _, listed = await channel_models.channel_upstream_models(
        call.admin, call.path["channel_id"], timeouts=services.config.timeouts, session=services.session,
        request_id=call.request_id, key_index=call.query.get("key"), match=call.query.get("match"),
    )  # fmt: skip
    data: dict[str, Any] = to_jsonable(listed)
    return data


async def draft_upstream_models(call: ApiCall) -> dict[str, Any]:
    services, fields = call.services, dict(call.body)
    listed = await channel_models.draft_upstream_models(
        call.admin, fields, timeouts=services.config.timeouts, session=services.session, request_id=call.request_id,
        match=fields.pop("match", None),
    )  # fmt: skip
    data: dict[str, Any] = to_jsonable(listed)
    return data


ONE = "/channels/{channel_id}"
E = (400, 401, 403, 404)
OPERATIONS = (
    Operation("GET", "/channels", "List channels, upstream keys masked (admin)", "channels", "admin", list_channels, array(CHANNEL)),
    Operation("POST", "/channels", "Add a channel (admin)", "channels", "admin", create_channel, CHANNEL, body=CREATE, status=201, errors=(400, 401, 403, 409)),
    Operation("GET", ONE, "Get a channel (admin)", "channels", "admin", get_channel, CHANNEL, errors=E),
    Operation("PATCH", ONE, "Change a channel's fields; api_keys replaces the upstream keys (admin)", "channels", "admin", update_channel, CHANNEL, body=UPDATE, errors=(400, 401, 403, 404, 409)),
    Operation("POST", ONE + "/enable", "Enable a channel and its disabled upstream keys (admin)", "channels", "admin", enable_channel, CHANNEL, errors=E),
    Operation("POST", ONE + "/disable", "Disable a channel (admin)", "channels", "admin", disable_channel, CHANNEL, errors=E),
    Operation("DELETE", ONE, "Delete a channel (admin)", "channels", "admin", delete_channel, None, status=204, errors=E),
    Operation("POST", ONE + "/test", "Send one small real request through the channel (admin)", "channels", "admin", test_channel, PROBE, body=TEST, errors=E),
    Operation("GET", ONE + "/upstream-models", "List the models the channel's upstream offers, asked with the channel's key (admin)", "channels", "admin",
              upstream_models, UPSTREAM_MODELS, query=LISTING_QUERY, errors=E),  # fmt: skip
    Operation("POST", "/channels/upstream-models", "List the models an upstream offers before its channel is added: type, base_url, api_keys … as for POST /channels (admin)",
              "channels", "admin", draft_upstream_models, UPSTREAM_MODELS, body=DRAFT),  # fmt: skip
)
