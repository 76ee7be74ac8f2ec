"""``/api/v1/groups`` and ``/api/v1/prices`` (admin): price ratios and default
limits of groups, and what each model costs."""

from __future__ import annotations

from typing import Any

import attrs

from gateway_core.admin import groups, prices
from gateway_core.money import format_usd
from gateway_core.records import PriceRecord
from .operation import ApiCall, Operation
from .schema import TIME_OR_NULL, array, micros, obj, rate_limit, usd

# checked by the admin layer's groups.parse_ratio (x-ratio): its message, as the CLI's and the console's
RATIO = {"type": "string", "maxLength": 40, "description": f"price ratio, decimal from 0 to {groups.MAX_RATIO} with at most 6 decimals (1: list prices)", "x-ratio": True}
LIMIT = {"type": ["integer", "null"], "minimum": 0, "maximum": 2**31}
GROUP = obj(
    {"name": {"type": "string"}, "ratio": {"type": "string"}, "ratio_ppm": {"type": "integer"}, "rpm": LIMIT, "tpm": LIMIT,
     "concurrency": LIMIT, "members": {"type": "integer"}, "keys": {"type": "integer"}, "created_at": TIME_OR_NULL},
    ("name", "ratio", "ratio_ppm"),
    closed=False,
)  # fmt: skip
# the group's default rate limits, refused with the admin layer's message as the CLI and the console refuse them
SET_GROUP = obj({"ratio": RATIO, **{name: rate_limit(f"default {label} of the group's keys") for name, label in
                                    (("rpm", "requests per minute"), ("tpm", "tokens per minute"), ("concurrency", "requests in flight"))}})
PRICE_FIELDS = ("input", "output", "cached_input", "cache_write")
PRICE = obj(
    {"model": {"type": "string"}, "free": {"type": "boolean"}, "updated_at": TIME_OR_NULL,
     "source": {"type": "string", "enum": ["operator", "catalogue"], "description": "operator: set on this gateway; catalogue: the list price of a served model the operator has not priced (updated_at: the date it was checked)"},
     **{f"{name}_per_mtok": usd(f"{name} per million tokens", nullable=True) for name in PRICE_FIELDS},
     **{f"{name}_micros_per_mtok": micros(f"{name} per million tokens", nullable=True) for name in PRICE_FIELDS}},
    ("model", "free", "input_micros_per_mtok", "output_micros_per_mtok"),
    closed=False,
)  # fmt: skip
SET_PRICE = obj(
    {"free": {"type": "boolean"},
     **{f"{name}_micros_per_mtok": micros(f"{name} per million tokens", nullable=True) for name in PRICE_FIELDS},
     **{name: micros(name, nullable=True) for name in ("per_image_micros", "per_mchar_micros", "per_audio_minute_micros")}},
)  # fmt: skip
NAME_PARAM = ("name",)


def group_json(group: Any) -> dict[str, Any]:
    return {**attrs.asdict(group), "ratio": groups.format_ratio(group.ratio_ppm)}


def price_json(price: PriceRecord) -> dict[str, Any]:
    data = attrs.asdict(price)
    for name in PRICE_FIELDS:
        value = data.get(f"{name}_micros_per_mtok")
        data[f"{name}_per_mtok"] = None if value is None else format_usd(value)
    return data


async def list_groups(call: ApiCall) -> list[dict[str, Any]]:
    return [group_json(group) for group in await groups.list_groups(call.admin)]


async def set_group(call: ApiCall) -> dict[str, Any]:
    name, body = call.path["name"], call.body
    before = next((group for group in await groups.list_groups(call.admin) if group.name == name), None)
    ratio = groups.parse_ratio(body["ratio"]) if "ratio" in body else None
    limits = {field: body[field] for field in ("rpm", "tpm", "concurrency") if field in body}
    group = await groups.set_group(call.admin, name, ratio_ppm=ratio, limits=limits)
    await call.audit("group.set", f"group {name}", group_json(before) if before else None, group_json(group))
    return group_json(group)


async def list_prices(call: ApiCall) -> list[dict[str, Any]]:
    return [price_json(price) for price in await prices.effective_prices(call.admin)]


async def set_price(call: ApiCall) -> dict[str, Any]:
    model, body = call.path["model"], call.body
    before = next((price for price in await prices.list_prices(call.admin) if price.model == model), None)
    fields = {name: value for name, value in body.items() if value is not None}
    fields.setdefault("input_micros_per_mtok", 0)
    fields.setdefault("output_micros_per_mtok", 0)
    stored = await prices.set_price(call.admin, PriceRecord(model=model, **fields))
    await call.audit("price.set", f"price {model}", price_json(before) if before else None, price_json(stored))
    return price_json(stored)


async def delete_price(call: ApiCall) -> None:
    model = call.path["model"]
    before = next((price for price in await prices.list_prices(call.admin) if price.model == model), None)
    await prices.delete_price(call.admin, model)
    await call.audit("price.delete", f"price {model}", price_json(before) if before else None, None)


OPERATIONS = (
    Operation("GET", "/groups", "List groups (admin)", "groups", "admin", list_groups, array(GROUP)),
    Operation("PUT", "/groups/{name}", "Create a group or change its ratio and default limits (admin)", "groups", "admin", set_group, GROUP, body=SET_GROUP, text_params=NAME_PARAM),
    Operation("GET", "/prices", "What each model is charged: the operator's prices and the catalogue's for served models the operator has not priced (admin)", "prices", "admin", list_prices, array(PRICE)),
    Operation("PUT", "/prices/{model}", "Create or replace a model's price, in micro-USD per million tokens (admin)", "prices", "admin", set_price, PRICE, body=SET_PRICE, text_params=("model",)),
    Operation("DELETE", "/prices/{model}", "Delete a model's price (admin)", "prices", "admin", delete_price, None, status=204, errors=(401, 403, 404), text_params=("model",)),
)
