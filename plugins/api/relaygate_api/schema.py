"""JSON schemas of the management API, and the one validator requests pass.

The schemas are plain JSON Schema (the OpenAPI 3.1 dialect): the operations
declare them, :mod:`.openapi` publishes them and :func:`validate` enforces them,
so the document and the behaviour cannot drift. The validator knows the
keywords used here (``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``enum``, ``minimum``, ``maximum``,
``minLength``, ``maxLength``, ``minItems``, ``maxItems``, ``pattern``, ``x-usd``: a
decimal USD string, refused with :func:`gateway_core.money.not_a_decimal`'s message, and
the keywords of :data:`RULES`, each naming the admin layer's rule for a value the CLI and
the console take too: ``x-rate-limit`` (a rate limit), ``x-budget`` (a budget in USD),
``x-budget-micros`` (a budget in micro-USD), ``x-ratio`` (a group's price ratio),
``x-channel-number`` (a channel's priority, weight or concurrency), refused with that
rule's message) and names
the field at fault. ``oneOf`` is published for the bodies that take exactly one of
``amount`` and ``amount_micros``; :func:`.shapes.amount_of` enforces it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from gateway_core.admin import Invalid
from gateway_core.admin.groups import parse_ratio
from gateway_core.admin.rules import (
    CHANNEL_NUMBERS, MAX_AMOUNT_MICROS, MAX_RATE_LIMIT, budget_micros, check_amount, check_channel_number, check_rate_limit,
)
from gateway_core.money import not_a_decimal
from .errors import ApiError

Schema = dict[str, Any]

USD_PATTERN = r"^-?[0-9]{1,13}(\.[0-9]{1,6})?$"
ID = {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
TIME = {"type": "number", "description": "Unix time in seconds"}
TIME_OR_NULL = {"type": ["number", "null"], "description": "Unix time in seconds"}
MAX_PATH_ID = 2**62
PATH_ID: Schema = {"type": "integer", "minimum": 1, "maximum": MAX_PATH_ID}
PATH_TEXT: Schema = {"type": "string", "minLength": 1, "maxLength": 200}
NAME = {"type": "string", "minLength": 1, "maxLength": 100}
NAMES = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200}, "maxItems": 500}


def usd(description: str, *, signed: bool = False, nullable: bool = False) -> Schema:
    """A decimal string of USD (never a float)."""
    pattern = USD_PATTERN if signed else USD_PATTERN.replace("^-?", "^")
    return {"type": ["string", "null"] if nullable else "string", "pattern": pattern, "description": description + " (USD, decimal)", "x-usd": True}


def micros(description: str, *, nullable: bool = False, signed: bool = False) -> Schema:
    low = -(2**63) + 1 if signed else 0
    return {"type": ["integer", "null"] if nullable else "integer", "minimum": low, "maximum": 2**63 - 1, "description": description + " (integer micro-USD)"}


def budget(description: str, *, in_micros: bool = False) -> Schema:
    """A budget (a spending cap that resets; ``null``: no cap) in USD or micro-USD, checked and refused as every front does."""
    if in_micros:
        return {**micros(description, nullable=True), "maximum": MAX_AMOUNT_MICROS, "x-budget-micros": True}
    return {**usd(description, nullable=True), "x-budget": True}


def channel_number(name: str) -> Schema:
    """A channel's ``priority``, ``weight`` or ``concurrency``, checked and refused as every front does."""
    low, high = CHANNEL_NUMBERS[name]
    return {"type": "integer", "minimum": low, "maximum": high, "x-channel-number": True}


def rate_limit(description: str) -> Schema:
    """A rate limit (``null``: none set; 0: unlimited), checked and refused as every front does."""
    return {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_RATE_LIMIT, "description": description + " (0: unlimited; null: none)", "x-rate-limit": True}


def obj(properties: dict[str, Schema], required: tuple[str, ...] = (), *, closed: bool = True) -> Schema:
    schema: Schema = {"type": "object", "properties": properties, "required": list(required)}
    if closed:
        schema["additionalProperties"] = False
    return schema


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def page(items: Schema) -> Schema:
    """A page of records and the cursor of the next one (``null``: the last page)."""
    return obj({"items": array(items), "next_cursor": {"type": ["string", "null"]}}, ("items", "next_cursor"))


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,), "null": (type(None),),
}  # fmt: skip


# a schema keyword naming the admin layer's rule for a value (``null`` aside): the
# validator refuses with its message, the same as the CLI's and the console's
RULES: dict[str, Callable[[Any, str], object]] = {
    "x-rate-limit": check_rate_limit,
    "x-budget": budget_micros,
    "x-budget-micros": lambda value, field: check_amount(value, field, allow_zero=True),
    "x-channel-number": lambda value, field: check_channel_number(value, field.rsplit(".", 1)[-1]),  # its bounds by the field's own name
    "x-ratio": lambda value, field: parse_ratio(value) if isinstance(value, str) else None,  # a number: "must be string"
}


def validate(value: Any, schema: Schema, where: str = "body") -> Any:
    """``value`` when it fits ``schema``; else :class:`ApiError` 400 naming the field."""
    types = schema.get("type")
    for keyword, rule in RULES.items():
        if schema.get(keyword) and value is not None:
            try:
                rule(value, where)
            except Invalid as exc:  # the admin layer's words, as the CLI and the console say them
                raise ApiError(400, str(exc), field=where) from None
    if schema.get("x-usd") and value is not None and not (isinstance(value, str) and _pattern(schema["pattern"]).search(value)):
        raise ApiError(400, not_a_decimal(where, value), field=where)  # as the CLI and the console say it
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_is(value, name) for name in names):
            raise ApiError(400, f"{where} must be {' or '.join(names)}", field=where)
    if "enum" in schema and value not in schema["enum"]:
        raise ApiError(400, f"{where} must be one of {', '.join(map(str, schema['enum']))}", field=where)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise ApiError(400, f"{where} must be at least {schema['minimum']}", field=where)
        if "maximum" in schema and value > schema["maximum"]:
            raise ApiError(400, f"{where} must be at most {schema['maximum']}", field=where)
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise ApiError(400, f"{where} must not be empty" if schema["minLength"] == 1 else f"{where} is too short", field=where)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ApiError(400, f"{where} must be at most {schema['maxLength']} characters", field=where)
        if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            raise ApiError(400, f"{where} is malformed ({schema.get('description', schema['pattern'])})", field=where)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise ApiError(400, f"{where} must have at least {schema['minItems']} item(s)", field=where)
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise ApiError(400, f"{where} must have at most {schema['maxItems']} items", field=where)
        if "items" in schema:
            return [validate(item, schema["items"], f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict) and schema.get("type") in ("object", ["object", "null"]):
        properties = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                raise ApiError(400, f"{_join(where, name)} is required", field=_join(where, name))
        if schema.get("additionalProperties") is False:
            for name in value:
                if name not in properties:
                    raise ApiError(400, f"{_join(where, name)} is not a known field", field=_join(where, name))
        return {name: validate(item, properties[name], _join(where, name)) if name in properties else item for name, item in value.items()}
    return value


def _is(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "number" and isinstance(value, float) and value != value:  # NaN
        return False
    return isinstance(value, _TYPES[name])


def _join(where: str, name: str) -> str:
    return name if where == "body" else f"{where}.{name}"


@lru_cache(maxsize=64)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)
