"""Gemini schemas → plain JSON Schema, for protocols that speak JSON Schema.

Gemini takes two kinds of schema: ``parameters`` / ``responseSchema`` (an OpenAPI
3.0 subset with upper-case type names, ``"OBJECT"``, ``"INTEGER"``, and
``nullable``) and ``parametersJsonSchema`` / ``responseJsonSchema`` (JSON Schema).
Clients mix them up: the Gemini command-line client sends ``responseJsonSchema``
with upper-case type names. :func:`to_json_schema` accepts either and returns
JSON Schema as OpenAI and Anthropic read it:

- every ``type`` name in lower case (``TYPE_UNSPECIFIED`` dropped), in subschemas
  too (``properties``, ``items``, ``prefixItems``, ``anyOf`` / ``oneOf`` /
  ``allOf``, ``not``, ``additionalProperties``, ``$defs`` / ``definitions``);
- ``nullable: true`` becomes ``"null"`` among the types (``nullable`` is dropped);
- Gemini's ``propertyOrdering`` is dropped;
- int64 fields written as strings (``"minItems": "1"``) become integers.

Everything else is kept. The input is never modified.
"""

from __future__ import annotations

from typing import Any

from .wire import JSON

_TYPE_NAMES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
_INT_FIELDS = frozenset(("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"))
_SCHEMA_MAPS = frozenset(("properties", "$defs", "definitions", "patternProperties"))
_SCHEMA_LISTS = frozenset(("anyOf", "oneOf", "allOf", "prefixItems"))
_SCHEMA_ONE = frozenset(("not", "additionalProperties", "items", "contains", "propertyNames"))
_DROPPED = frozenset(("propertyOrdering", "property_ordering", "nullable"))
_SNAKE = {
    "any_of": "anyOf",
    "min_items": "minItems",
    "max_items": "maxItems",
    "min_length": "minLength",
    "max_length": "maxLength",
    "min_properties": "minProperties",
    "max_properties": "maxProperties",
}


def to_json_schema(schema: Any) -> Any:
    """The JSON Schema form of a Gemini schema (see the module docstring)."""
    if not isinstance(schema, dict):
        return schema
    out: JSON = {}
    for raw_key, value in schema.items():
        key = _SNAKE.get(raw_key, raw_key)
        if key in _DROPPED:
            continue
        if key == "type":
            kind = _type(value)
            if kind is not None:
                out["type"] = kind
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [to_json_schema(sub) for sub in value]
        elif key in _SCHEMA_ONE:
            out[key] = [to_json_schema(s) for s in value] if isinstance(value, list) else to_json_schema(value)
        elif key in _INT_FIELDS and isinstance(value, str) and value.isdigit() and len(value) <= 18:
            out[key] = int(value)
        else:
            out[key] = value
    if schema.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str) and kind != "null":
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
    return out


def _type(value: Any) -> Any:
    if isinstance(value, str):
        if value.upper() == "TYPE_UNSPECIFIED":
            return None
        return value.lower() if value.upper() in _TYPE_NAMES else value
    if isinstance(value, list):
        kinds = [_type(v) for v in value]
        return [k for k in kinds if k is not None] or None
    return value


def for_gemini(schema: Any) -> Any:
    """A JSON Schema as Gemini's ``*JsonSchema`` fields take it: without ``$schema``."""
    if isinstance(schema, dict) and "$schema" in schema:
        return {k: v for k, v in schema.items() if k != "$schema"}
    return schema
