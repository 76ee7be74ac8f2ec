"""Reading a client's JSON body within limits, before anything else touches it.

Every client protocol reads its JSON bodies through :func:`read_json_object`:
besides being valid JSON, a body must stay within :class:`JsonLimits` — nesting
depth, string length, items per array or object, integer range — so that what
the gateway forwards can always be written again (a body nested 255 levels deep
parses but cannot be re-serialised; an integer past 64 bits cannot be stored or
sent). A body past a limit is the client's mistake: ``InvalidRequestError`` (400)
naming the limit and where the body crosses it. The limits are ``[gateway.json]``
in ``plugins.toml`` (``docs/configuration.md``); a protocol gets them from
``config.json_limits`` when it is registered.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from .errors import InvalidRequestError

INT64_MAX = 2**63 - 1
# orjson refuses to write JSON nested deeper than 254 levels; conversions between
# protocols wrap a body in a few more levels, so a configured depth stays well below
DEPTH_CEILING = 200


@attrs.frozen
class JsonLimits:
    """Bounds on a client's JSON body.

    ``max_depth``: nested arrays and objects (the body itself is level 1);
    ``max_string_chars``: characters in one string (object keys too);
    ``max_items``: items in one array or members in one object;
    ``max_integer``: the largest magnitude of an integer (``-max_integer - 1`` is
    the smallest), 64-bit signed by default.
    """

    max_depth: int = 64
    max_string_chars: int = 32 * 1024 * 1024
    max_items: int = 100_000
    max_integer: int = INT64_MAX

    def __attrs_post_init__(self) -> None:
        for name in ("max_depth", "max_string_chars", "max_items", "max_integer"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"[gateway.json] {name} must be a positive integer, got {value!r}")
        if self.max_depth > DEPTH_CEILING:
            raise ValueError(f"[gateway.json] max_depth must be at most {DEPTH_CEILING}, got {self.max_depth}")
        if self.max_integer > INT64_MAX:
            raise ValueError(f"[gateway.json] max_integer must be at most {INT64_MAX} (64-bit signed), got {self.max_integer}")


DEFAULT_LIMITS = JsonLimits()


def read_json_object(body: bytes, limits: JsonLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The JSON object ``body`` holds, checked against ``limits``; else ``InvalidRequestError``."""
    if not body:
        raise InvalidRequestError("The request body is empty; send a JSON object.")
    data = loads_checked(body, limits, "The request body")
    if not isinstance(data, dict):
        raise InvalidRequestError(f"The request body must be a JSON object, not {_kind(data)}.")
    return data


def loads_checked(text: bytes | str, limits: JsonLimits = DEFAULT_LIMITS, what: str = "The JSON") -> Any:
    """Parse JSON a client sent (a body, or a string holding JSON such as a tool
    call's arguments) and check it against ``limits``; else ``InvalidRequestError``."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequestError(f"{what} is not valid JSON: {exc}.") from None
    check_json(data, limits, len(text))
    return data


def check_json(value: Any, limits: JsonLimits = DEFAULT_LIMITS, size: int | None = None) -> None:
    """Raise ``InvalidRequestError`` when ``value`` (parsed JSON) crosses a limit.

    ``size``, the length of the text ``value`` was parsed from, lets the walk skip
    what that length already rules out: a string has at most as many characters as
    its text has bytes, and an array or object of N items takes at least 2N - 1."""
    strings = size is None or size > limits.max_string_chars
    items = size is None or size >= 2 * limits.max_items - 1
    if strings or items:
        within = _within(value, 1, limits, strings, items)
    else:  # the usual body: only its depth and its integers to look at
        kind = type(value)
        within = _nested_within(value, 1, limits.max_depth, -limits.max_integer - 1, limits.max_integer) if kind is dict or kind is list else (
            kind is not int or -limits.max_integer - 1 <= value <= limits.max_integer)  # fmt: skip
    if not within:
        _refuse(value, limits)


def _nested_within(node: Any, depth: int, max_depth: int, low: int, high: int) -> bool:
    """:func:`_within` for a container at ``depth`` when no string or item count can
    cross a limit: whether it nests at most ``max_depth`` levels and holds integers
    from ``low`` to ``high`` only."""
    if depth > max_depth:
        return False
    for item in node.values() if type(node) is dict else node:
        kind = type(item)
        if kind is dict or kind is list:
            if not _nested_within(item, depth + 1, max_depth, low, high):
                return False
        elif kind is int and not low <= item <= high:
            return False
    return True


def _within(node: Any, depth: int, limits: JsonLimits, strings: bool, items: bool) -> bool:
    """Whether ``node`` (a container at ``depth``, or a scalar) stays within ``limits``."""
    kind = type(node)
    if kind is dict:
        members: Any = node.values()
        if strings and any(len(key) > limits.max_string_chars for key in node):
            return False
    elif kind is list:
        members = node
    elif kind is str:
        return not strings or len(node) <= limits.max_string_chars
    elif kind is int:
        return bool(-limits.max_integer - 1 <= node <= limits.max_integer)
    else:
        return True
    if depth > limits.max_depth or (items and len(node) > limits.max_items):
        return False
    for item in members:
        kind = type(item)
        if kind is dict or kind is list:
            if not _within(item, depth + 1, limits, strings, items):
                return False
        elif kind is str:
            if strings and len(item) > limits.max_string_chars:
                return False
        elif kind is int and not -limits.max_integer - 1 <= item <= limits.max_integer:
            return False
    return True


def _refuse(value: Any, limits: JsonLimits) -> None:
    """Say which limit ``value`` crosses first, and where (walked again, on the refusal only)."""
    path, problem = _first_problem(value, limits, (), 1) or ((), "crosses a limit")
    where = ".".join(map(str, path)) or "the body"
    raise InvalidRequestError(f"{where}: {problem}.", param=where if path else None, code="json_limit")


def _first_problem(node: Any, limits: JsonLimits, path: tuple[Any, ...], depth: int) -> tuple[tuple[Any, ...], str] | None:
    kind = type(node)
    if kind in (dict, list):
        if depth > limits.max_depth:
            return path, f"JSON nested deeper than {limits.max_depth} levels"
        if len(node) > limits.max_items:
            return path, f"more than {limits.max_items} items"
        items = node.items() if kind is dict else enumerate(node)
        for key, item in items:
            if isinstance(key, str) and len(key) > limits.max_string_chars:
                return path, f"a member name longer than {limits.max_string_chars} characters"
            found = _first_problem(item, limits, (*path, key), depth + 1)
            if found is not None:
                return found
    elif kind is str and len(node) > limits.max_string_chars:
        return path, f"a string longer than {limits.max_string_chars} characters"
    elif kind is int and not -limits.max_integer - 1 <= node <= limits.max_integer:
        return path, f"an integer outside -{limits.max_integer + 1}..{limits.max_integer}"
    return None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
