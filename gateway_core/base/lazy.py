"""Loading on first use: names a package offers but imports only when first
read (PEP 562), so importing the package (``relaygate --help`` imports
several) costs nothing more than its own module; a mapping made when first read."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


def by_module(modules: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """``{".model": ("Usage", "Tool")}`` → ``{"Usage": ".model", "Tool": ".model"}``."""
    return {name: module for module, names in modules.items() for name in names}


def loader(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package``: each of ``names`` imported
    from its module (relative to ``package``; ``"."`` + the name itself: a
    submodule) when first read, then kept in the package's namespace."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module == "." + name:
            value = importlib.import_module(module, package)
        else:
            value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


class MappingWhenRead(Mapping[K, V]):
    """The mapping ``make()`` returns, made the first time it is read: the CLI
    hands the admin layer the channel types and the price catalogue this way,
    so a command that reads neither imports no adapter and parses no catalogue."""

    def __init__(self, make: Callable[[], Mapping[K, V]]) -> None:
        self._make: Callable[[], Mapping[K, V]] | None = make
        self._made: Mapping[K, V] = {}

    def _mapping(self) -> Mapping[K, V]:
        if self._make is not None:
            self._made, self._make = self._make(), None
        return self._made

    def __getitem__(self, key: K) -> V:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())


class LoggerWhenUsed:
    """structlog's logger ``name``, with structlog imported at the first message:
    a module of the admin path (the store, the invalidation messages) logs only
    when something goes wrong, and a ``relaygate`` command should not pay for
    importing the logging library (and its pretty-printer) when nothing does."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._logger is None:
            import structlog

            self._logger = structlog.get_logger(self._name)  # what the module held before: structlog's lazy proxy
        return getattr(self._logger, method)
