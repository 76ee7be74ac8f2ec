"""Reading recorded wire examples: the files under an adapter's ``tests/examples/``.

An adapter keeps real requests, answers and stream transcripts of its upstream
there and tests its pure translations against them. :class:`Examples` reads
them, cutting streams with the same splitters the gateway uses on the wire.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from ..framing import JSONArraySplitter, NDJSONSplitter
from ..sse import SSESplitter, frame_fields

DONE = b"[DONE]"


class Examples:
    """The recorded wire examples in one folder."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def beside(cls, test_file: str | os.PathLike[str]) -> Examples:
        """The ``examples`` folder beside a test module, or the nearest one above
        it (``Examples.beside(__file__)``)."""
        folder = Path(test_file).resolve().parent
        for candidate in (folder, *folder.parents[:2]):
            if (candidate / "examples").is_dir():
                return cls(candidate / "examples")
        return cls(folder / "examples")

    @classmethod
    def of(cls, package: str | ModuleType) -> Examples:
        """The ``tests/examples`` folder of an adapter, found from its import
        package (``Examples.of("gateway_mine")``): the folder beside the package's
        own folder, as in a source checkout (``adapters/mine/tests/examples``)."""
        module = importlib.import_module(package) if isinstance(package, str) else package
        if module.__file__ is None:
            raise ValueError(f"{module.__name__} has no files: cannot find its tests/examples")
        return cls(Path(module.__file__).resolve().parents[1] / "tests" / "examples")

    def path(self, name: str) -> Path:
        path = self.root / name
        if not path.is_file():
            raise FileNotFoundError(f"no recorded example {name!r} in {self.root}")
        return path

    def names(self, pattern: str = "*") -> list[str]:
        """The example files matching ``pattern``, sorted."""
        return sorted(path.name for path in self.root.glob(pattern) if path.is_file())

    def raw(self, name: str) -> bytes:
        return self.path(name).read_bytes()

    def json(self, name: str) -> Any:
        return orjson.loads(self.raw(name))

    def frames(self, name: str) -> list[bytes]:
        """The SSE frames of a transcript, each with its blank line. A transcript
        whose last frame is not terminated is a broken example."""
        splitter = SSESplitter()
        frames = list(splitter.feed(self.raw(name)))
        if splitter.flush().strip():
            raise ValueError(f"{name}: the last SSE frame is not terminated by a blank line")
        return frames

    def events(self, name: str) -> list[tuple[str | None, Any]]:
        """``(event name, JSON data)`` of each SSE frame that has data, up to a
        final ``data: [DONE]`` (left out)."""
        out: list[tuple[str | None, Any]] = []
        for frame in self.frames(name):
            event, data = frame_fields(frame)
            if data:
                out.append((event, data))
        if out and out[-1][1] == DONE:
            out.pop()
        return [(event, orjson.loads(data)) for event, data in out]

    def sse(self, name: str) -> list[Any]:
        """The JSON data of each SSE frame, up to a final ``data: [DONE]`` (left out)."""
        return [payload for _, payload in self.events(name)]

    def ndjson(self, name: str) -> list[Any]:
        """The JSON value of each line of a newline-delimited JSON transcript."""
        splitter = NDJSONSplitter()
        lines = [*splitter.feed(self.raw(name)), splitter.flush()]
        return [orjson.loads(line) for line in lines if line.strip()]

    def json_array(self, name: str) -> list[Any]:
        """The elements of a streamed JSON array transcript, each as the gateway
        cuts it from the stream."""
        splitter = JSONArraySplitter()
        elements = splitter.feed(self.raw(name))
        splitter.flush()
        return [orjson.loads(element) for element in elements]
