"""Places in a JSON value, for tests that put another value in each (property tests
of parsers and converters: any value, in any field)."""

from __future__ import annotations

from typing import Any

Path = tuple[Any, ...]


def paths_of(value: Any, prefix: Path = ()) -> list[Path]:
    """Every place below ``value`` where another value can go: keys and indexes, in order."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths_of(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths_of(item, (*prefix, index))
    return found


def replaced(value: Any, path: Path, new: Any) -> Any:
    """A copy of ``value`` with ``new`` at ``path`` (``value`` itself is left as it is)."""
    if not path:
        return new
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = replaced(value[path[0]], path[1:], new)
    return copy
