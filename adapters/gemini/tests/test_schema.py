"""Gemini schemas (OpenAPI subset, upper-case types) → JSON Schema."""

from __future__ import annotations

from gateway_gemini.schema import for_gemini, to_json_schema


def test_types_are_lower_cased_everywhere():
    schema = {
        "type": "OBJECT",
        "properties": {
            "type": {"type": "STRING", "description": "a property named 'type' keeps its name"},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": "3"},
            "either": {"anyOf": [{"type": "INTEGER"}, {"type": "NULL"}]},
            "nested": {"type": "OBJECT", "properties": {"ok": {"type": "BOOLEAN"}}, "propertyOrdering": ["ok"]},
        },
        "$defs": {"point": {"type": "OBJECT", "additionalProperties": {"type": "NUMBER"}}},
    }
    assert to_json_schema(schema) == {
        "type": "object",
        "properties": {
            "type": {"type": "string", "description": "a property named 'type' keeps its name"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "nested": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        },
        "$defs": {"point": {"type": "object", "additionalProperties": {"type": "number"}}},
    }


def test_nullable_becomes_a_null_type_and_input_is_untouched():
    schema = {"type": "STRING", "nullable": True, "format": "date-time"}
    assert to_json_schema(schema) == {"type": ["string", "null"], "format": "date-time"}
    assert schema == {"type": "STRING", "nullable": True, "format": "date-time"}
    assert to_json_schema({"type": ["STRING", "INTEGER"], "nullable": True}) == {"type": ["string", "integer", "null"]}
    assert to_json_schema({"type": "TYPE_UNSPECIFIED", "description": "x"}) == {"description": "x"}


def test_json_schema_passes_unchanged_but_for_snake_case_names():
    schema = {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}, "required": ["a"], "additionalProperties": False}
    assert to_json_schema(schema) == schema
    assert to_json_schema({"type": "ARRAY", "min_items": "2", "any_of": [{"type": "STRING"}]}) == {
        "type": "array",
        "minItems": 2,
        "anyOf": [{"type": "string"}],
    }


def test_for_gemini_drops_the_meta_schema():
    assert for_gemini({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}) == {"type": "object"}
