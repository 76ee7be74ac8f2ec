"""gateway_core.channel_settings: a channel type's typed settings, the validator
that converts what operators type, and the tolerant reading of stored values."""

from __future__ import annotations

import pytest

from gateway_core import Setting
from gateway_core.channel_settings import SettingError, setting_text, validate_settings

DELAY = Setting("delay_ms", "int", default=30, min=0, max=60_000, help="milliseconds between words")
RATIO = Setting("ratio", "float", default=0.5, min=0.0, max=1.0)
VERSION = Setting("api_version", "choice", default="v1beta", choices=("v1beta", "v1"))
NATIVE = Setting("native", "bool")  # three states: not set, true, false
LABEL = Setting("label", "str", default="x")
SCHEMA = (DELAY, RATIO, VERSION, NATIVE, LABEL)


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ({"delay_ms": "250"}, {"delay_ms": 250}),
        ({"delay_ms": " 0 "}, {"delay_ms": 0}),
        ({"delay_ms": 7}, {"delay_ms": 7}),
        ({"ratio": "0.25"}, {"ratio": 0.25}),
        ({"ratio": 1}, {"ratio": 1.0}),
        ({"api_version": "v1"}, {"api_version": "v1"}),
        ({"native": "TRUE"}, {"native": True}),
        ({"native": "off"}, {"native": False}),
        ({"native": "1"}, {"native": True}),
        ({"native": False}, {"native": False}),
        ({"label": ""}, {"label": ""}),
        ({"label": " spaced "}, {"label": " spaced "}),
        ({"native": None, "label": "y"}, {"label": "y"}),
        ({}, {}),
    ],
)
def test_text_and_typed_values_are_stored_typed(raw, stored):
    result = validate_settings(SCHEMA, raw)
    assert result == stored
    assert [type(value) for value in result.values()] == [type(value) for value in stored.values()]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"delay_ms": "fast"}, "setting 'delay_ms' must be a whole number from 0 to 60000, got 'fast'"),
        ({"delay_ms": "2.5"}, "setting 'delay_ms' must be a whole number from 0 to 60000, got '2.5'"),
        ({"delay_ms": True}, "setting 'delay_ms' must be a whole number"),
        ({"delay_ms": "-1"}, "setting 'delay_ms' must be at least 0, got '-1'"),
        ({"delay_ms": 60_001}, "setting 'delay_ms' must be at most 60000, got 60001"),
        ({"ratio": "nan"}, "setting 'ratio' must be a number from 0 to 1, got 'nan'"),
        ({"ratio": "1.5"}, "setting 'ratio' must be at most 1, got '1.5'"),
        ({"api_version": "v2"}, "setting 'api_version' must be one of v1beta, v1, got 'v2'"),
        ({"native": "maybe"}, "setting 'native' must be true or false (or yes/no, on/off, 1/0), got 'maybe'"),
        ({"native": 1}, "setting 'native' must be true or false"),
        ({"label": 5}, "setting 'label' must be text, got 5"),
        ({"delay": "5"}, "unknown setting 'delay' (known: delay_ms, ratio, api_version, native, label)"),
        ({"b": "1", "a": "2"}, "unknown settings 'a', 'b' (known: "),
    ],
)
def test_bad_names_and_values_are_refused_naming_the_setting(raw, message):
    with pytest.raises(SettingError) as refused:
        validate_settings(SCHEMA, raw)
    assert message in str(refused.value)


def test_a_type_without_settings_says_so():
    with pytest.raises(SettingError, match=r"unknown setting 'x' \(this channel type has none\)"):
        validate_settings((), {"x": "1"})
    assert validate_settings((), {}) == {}


def test_read_gives_the_stored_value_else_the_default_and_tolerates_old_text():
    assert DELAY.read({}) == 30 and NATIVE.read({}) is None and VERSION.read({"api_version": None}) == "v1beta"
    assert DELAY.read({"delay_ms": 0}) == 0 and LABEL.read({"label": ""}) == ""
    # stored before settings were validated: read as the validator converts them
    assert NATIVE.read({"native": "true"}) is True and DELAY.read({"delay_ms": "45"}) == 45
    assert RATIO.read({"ratio": "0.75"}) == 0.75
    # a value the validator refuses reads as the default
    assert DELAY.read({"delay_ms": "soon"}) == 30 and DELAY.read({"delay_ms": -5}) == 30
    assert VERSION.read({"api_version": "v9"}) == "v1beta" and NATIVE.read({"native": "perhaps"}) is None


def test_what_a_setting_accepts_for_people():
    assert DELAY.accepts == "a whole number from 0 to 60000"
    assert Setting("n", "int", min=1).accepts == "a whole number of at least 1"
    assert Setting("n", "float", max=2.5).accepts == "a number of at most 2.5"
    assert VERSION.accepts == "one of v1beta, v1" and NATIVE.accepts == "true or false" and LABEL.accepts == "text"
    assert [setting_text(v) for v in (True, False, 30, 0.5, "v1", None)] == ["true", "false", "30", "0.5", "v1", ""]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "Delay"}, "lower case letters, digits and '_'"),
        ({"name": "x", "kind": "list"}, "kind must be one of str, int, float, bool, choice"),
        ({"name": "x", "kind": "choice"}, "choices go with the kind 'choice'"),
        ({"name": "x", "choices": ("a",)}, "choices go with the kind 'choice'"),
        ({"name": "x", "kind": "str", "min": 1}, "min and max bound an int or a float only"),
        ({"name": "x", "kind": "int", "default": "30"}, "the default '30' is not of its kind (int)"),
        ({"name": "x", "kind": "float", "default": 1}, "the default 1 is not of its kind (float)"),
        ({"name": "x", "kind": "int", "default": 5, "max": 3}, "the default of setting 'x' must be at most 3"),
        ({"name": "x", "kind": "choice", "choices": ("a",), "default": "b"}, "the default of setting 'x' must be one of a"),
    ],
)
def test_a_badly_declared_setting_fails_when_declared(fields, message):
    with pytest.raises(ValueError) as refused:
        Setting(**fields)
    assert message in str(refused.value)
