"""The installed distributions' entry points and versions, read from their metadata
folders (``*.dist-info``, ``*.egg-info``) on ``sys.path``.

What :mod:`importlib.metadata` finds for folders on the path, without importing it:
its import (email, zipfile, csv) and its scan took a fifth of every ``relaygate``
command's start-up, which reads only a few entry points and versions. As there,
the first distribution of a name on the path hides the others, and a group's entry
points are those of the distinct distributions. A path entry that is a zip file is
read by :mod:`importlib.metadata` after all.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from typing import Any

import attrs

FOLDER_SUFFIXES = (".dist-info", ".egg-info")


@attrs.frozen
class LoadedPlugin:
    """A plugin as ``relaygate plugins`` lists it: its name, module, and the
    distribution (with its version) that installed it, when one did."""

    name: str
    module: str
    distribution: str | None
    version: str | None


class Distribution:
    """One installed distribution: its metadata folder; its name and version read
    from the metadata's headers when first asked."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        # the name as the folder says it, normalized (``relaygate_demo-0.1.0.dist-info``)
        self.key = normalized(os.path.basename(folder).rpartition(".")[0].partition("-")[0])

    @property
    def name(self) -> str:
        return self._headers.get("name", "")

    @property
    def version(self) -> str | None:
        return self._headers.get("version")

    @functools.cached_property
    def _headers(self) -> dict[str, str]:
        """The metadata's first lines, ``Name: value``, up to the first blank line."""
        headers: dict[str, str] = {}
        for file in ("METADATA", "PKG-INFO"):
            try:
                with open(os.path.join(self.folder, file), encoding="utf-8") as metadata:
                    for line in metadata:
                        if not line.strip():
                            break
                        key, sep, value = line.partition(":")
                        if sep and not key.startswith((" ", "\t")):
                            headers.setdefault(key.strip().lower(), value.strip())
                return headers
            except OSError:
                continue
        return headers

    def entry_points(self) -> list[tuple[str, str, str]]:
        """``(group, name, value)`` for each line of ``entry_points.txt``."""
        try:
            with open(os.path.join(self.folder, "entry_points.txt"), encoding="utf-8") as file:
                text = file.read()
        except OSError:
            return []
        found, group = [], None
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("[") and line.endswith("]"):
                group = line[1:-1].strip()
            elif group is not None and "=" in line:
                name, _, value = line.partition("=")
                found.append((group, name.strip(), value.strip()))
        return found


class EntryPoint:
    """An entry point: ``value`` is ``module`` or ``module:attribute``."""

    def __init__(self, name: str, value: str, group: str, dist: Distribution | None) -> None:
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def load(self) -> Any:
        module, _, attribute = self.value.partition(":")
        loaded: Any = importlib.import_module(module.strip())
        for part in filter(None, attribute.split("[")[0].strip().split(".")):
            loaded = getattr(loaded, part)
        return loaded

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


def normalized(name: str) -> str:
    """A distribution's name as compared: ``Relaygate-Demo`` → ``relaygate_demo``."""
    return re.sub(r"[-_.]+", "_", name).lower()


@functools.cache
def distributions() -> tuple[Distribution, ...] | None:
    """The distributions on ``sys.path``, the first of each name (as the folder
    names it); ``None`` when a path entry is a zip file (read by importlib.metadata).
    Read once per process: a plugin installed later is found by the next."""
    seen: set[str] = set()
    found = []
    for entry in sys.path:
        path = entry or "."
        if os.path.isfile(path):
            return None
        try:
            names = sorted(os.listdir(path))
        except OSError:
            continue
        for name in names:
            if name.endswith(FOLDER_SUFFIXES) and os.path.isdir(os.path.join(path, name)):
                dist = Distribution(os.path.join(path, name))
                if dist.key not in seen:
                    seen.add(dist.key)
                    found.append(dist)
    return tuple(found)


@functools.cache
def entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The installed entry points of ``group``, by name (read once per process)."""
    dists = distributions()
    if dists is None:
        from importlib import metadata

        return tuple(sorted(metadata.entry_points(group=group), key=lambda ep: ep.name))  # type: ignore[arg-type]
    found = [EntryPoint(name, value, group, dist) for dist in dists for kind, name, value in dist.entry_points() if kind == group]
    return tuple(sorted(found, key=lambda ep: ep.name))


def version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or ``None``."""
    dists = distributions()
    if dists is None:
        from importlib import metadata

        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return None
    key = normalized(distribution)
    return next((dist.version for dist in dists if dist.key == key), None)
