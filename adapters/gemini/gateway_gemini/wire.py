"""Small helpers shared by the translation modules: reading Gemini's JSON leniently.

Google's API accepts both spellings of every field name (``inlineData`` and
``inline_data``): its official clients send camelCase, its REST examples use
snake_case. :func:`field` reads either, so the translators see one spelling.
Values inside user data (function arguments, schemas' property names) are never
renamed.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from gateway_core.errors import InvalidRequestError
from gateway_core.json_body import INT64_MAX

JSON = dict[str, Any]

_CAMEL_HUMP = re.compile(r"(?<!^)(?=[A-Z])")
_SNAKE_CACHE: dict[str, str] = {}
_DROPPED: dict[frozenset[str], frozenset[str]] = {}  # both spellings of a set of field names
_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "an object"}


def snake(name: str) -> str:
    """``inlineData`` → ``inline_data`` (cached: the set of field names is small)."""
    found = _SNAKE_CACHE.get(name)
    if found is None:
        found = _SNAKE_CACHE[name] = _CAMEL_HUMP.sub("_", name).lower()
    return found


def field(obj: Any, name: str) -> Any:
    """``obj[name]`` under its camelCase ``name`` or its snake_case twin; ``None`` if absent."""
    if not isinstance(obj, dict):
        return None
    value = obj.get(name)
    if value is None:
        value = obj.get(_SNAKE_CACHE.get(name) or snake(name))
    return value


def has_field(obj: Any, name: str) -> bool:
    return isinstance(obj, dict) and (name in obj or snake(name) in obj)


def without_fields(obj: JSON, names: frozenset[str] | set[str]) -> JSON:
    """``obj`` without the fields ``names`` (camelCase) in either spelling."""
    drop = _DROPPED.get(names) if isinstance(names, frozenset) else None
    if drop is None:
        drop = frozenset(names) | {snake(n) for n in names}
        if isinstance(names, frozenset) and len(_DROPPED) < 64:  # the modules' own constants
            _DROPPED[names] = drop
    if obj.keys() <= drop:
        return {}
    return {k: v for k, v in obj.items() if k not in drop}


def as_dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """A repeated field: Google also accepts a single object where a list is expected."""
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def as_int(value: Any) -> int:
    """An int64 field, which Google's JSON may write as a string (``"12"``);
    0 when it is none, or outside the int64 range."""
    number = 0
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) <= 24:
        number = int(value)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    return number if -INT64_MAX - 1 <= number <= INT64_MAX else 0


def kind_of(value: Any) -> str:
    return "null" if value is None else _NAMES.get(type(value), type(value).__name__)


def fail(message: str, param: str | None = None) -> NoReturn:
    raise InvalidRequestError(message, param=param)


def expect(value: Any, kind: type | tuple[type, ...], param: str, expected: str) -> Any:
    """``value`` when it is ``None`` or of ``kind``; else an ``InvalidRequestError`` naming ``param``."""
    if value is not None and (not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind))):
        fail(f"Invalid value at '{param}': expected {expected}, got {kind_of(value)}.", param)
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)
