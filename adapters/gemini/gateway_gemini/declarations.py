"""Function declarations read once: the core :class:`~gateway_core.model.Tool` of a
Gemini ``FunctionDeclaration``, kept by the declaration's JSON bytes.

A client sends the same tools on every turn of a conversation (a coding agent: 30
declarations, about 54 KB, on each of its requests), and turning their schemas from
Gemini's OpenAPI subset into JSON Schema was the largest part of reading such a body.
The reading is a pure function of the declaration, so a declaration whose bytes
(``orjson.dumps`` of the parsed object: its members in their order, so equal bytes
mean an equal declaration) were read before gives the same ``Tool`` again.

The cache is bounded whatever clients send: at most :data:`MAX_ENTRIES` declarations
and :data:`MAX_TOTAL_BYTES` of their JSON, the least recently used dropped first; a
declaration larger than :data:`MAX_ENTRY_BYTES`, or one orjson cannot write, is read
every time (full of the coding agent's declarations, 512 of them and 0.93 MB of JSON, the
cache held 6.2 MB of Python objects, keys included, measured with ``tracemalloc``). Only
declarations that read without an error are kept. The cache is used on the event loop's
thread only. The ``Tool`` and its schema are shared by the requests that sent the same
declaration: like every core value, they are read and never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from gateway_core.model import Tool

MAX_ENTRIES = 512
MAX_ENTRY_BYTES = 64 * 1024
MAX_TOTAL_BYTES = 1024 * 1024


class DeclarationCache:
    """Tools by their declaration's JSON bytes, bounded in count and in bytes."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_entry_bytes: int = MAX_ENTRY_BYTES, max_total_bytes: int = MAX_TOTAL_BYTES) -> None:
        self.max_entries = max_entries
        self.max_entry_bytes = max_entry_bytes
        self.max_total_bytes = max_total_bytes
        self._tools: dict[bytes, Tool] = {}  # in the order of their last use
        self.total_bytes = 0

    def __len__(self) -> int:
        return len(self._tools)

    def tool(self, declaration: dict[str, Any], where: str, read: Callable[[dict[str, Any], str], Tool]) -> Tool:
        """``read(declaration, where)`` (``where``: the declaration's place in the body,
        for an error), or the tool it gave for the same bytes before."""
        try:
            key = orjson.dumps(declaration)
        except orjson.JSONEncodeError:  # an integer orjson cannot write: read it, keep nothing
            return read(declaration, where)
        kept = self._tools.pop(key, None)
        if kept is not None:
            self._tools[key] = kept  # now the most recently used
            return kept
        tool = read(declaration, where)
        if len(key) <= self.max_entry_bytes:
            self._keep(key, tool)
        return tool

    def _keep(self, key: bytes, tool: Tool) -> None:
        self._tools[key] = tool
        self.total_bytes += len(key)
        while len(self._tools) > self.max_entries or self.total_bytes > self.max_total_bytes:
            oldest = next(iter(self._tools))
            self._tools.pop(oldest, None)
            self.total_bytes -= len(oldest)


DECLARATIONS = DeclarationCache()
