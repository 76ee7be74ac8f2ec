"""The request bodies of the bench's scenarios, and how each tells the fake upstream
what to answer.

A body asks ``bench/fast_upstream.py`` for its stream's shape with a marker in its
``user`` field (``"bench:tokens=500:pace=5"``: 500 content chunks, 5 ms apart), a
field every gateway forwards unchanged (``bench/wires.py`` moves it into the first
user turn of the protocols without one); a body without it gets the upstream's
default stream.

- ``tiny``: two short messages (the bench's original body);
- ``paced``: the tiny body, its stream's chunks arriving ``pace`` ms apart (a real
  model's stream: one upstream read and one client write per token);
- ``agent``: what a coding agent sends (:func:`agent_body`, about 150 KB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from loadgen import MODEL, request_body


@dataclass(frozen=True)
class Shape:
    stream: bool
    body: bytes


def tiny(stream: bool) -> Shape:
    return Shape(stream, request_body(stream))


def paced(tokens: int, pace_ms: float) -> Shape:
    body = orjson.loads(request_body(True))
    body["user"] = f"bench:tokens={tokens}:pace={pace_ms:g}"
    return Shape(True, orjson.dumps(body))


def agent(stream: bool) -> Shape:
    return Shape(stream, agent_body(stream))


def stream_request(body: bytes) -> tuple[int | None, float]:
    """What a request asks of the fake upstream by a ``bench:tokens=N:pace=MS`` marker
    anywhere in its body (a chat body's ``user`` field, or a turn's text where the
    protocol has no such field): ``(content chunks or None for the default,
    milliseconds between chunks)``."""
    found = _MARKER.search(body)
    if found is None:
        return None, 0.0
    return int(found.group(1)), float(found.group(2)) if found.group(2) else 0.0


_MARKER = re.compile(rb"bench:tokens=(\d+)(?::pace=([0-9.]+))?")


# --- the coding agent's body -----------------------------------------------------------

SYSTEM = (
    "You are an interactive coding agent working in the user's repository. Read files before you change them, "
    "keep each change small, run the tests after each change, and explain what you did in a few sentences. "
    "Never print secrets; never push without being asked; prefer the project's own helpers. "
)
SOURCE = '''def settle(ledger, request_id, charge):
    """Write the charge of one request: the hold released, the spend recorded."""
    hold = ledger.holds.pop(request_id, None)
    if hold is None:
        raise KeyError(f"no hold for {request_id}")
    ledger.balance += hold.amount - charge  # micro-USD, exact
    ledger.rows.append((request_id, charge, "settled"))
    return ledger.balance

'''
NON_ASCII = "Zusammenfassung: Größe geprüft — 完了しました、テストは成功 ✓ (naïve café, ½ µs) "


def _schema(depth: int, i: int) -> dict[str, Any]:
    """A nested JSON schema, as agent tools declare them."""
    if depth == 0:
        return {"type": "string", "description": f"The value of field {i}: a path, a pattern or a line range."}
    return {
        "type": "object",
        "description": f"Options of level {depth} for tool {i}.",
        "properties": {
            "path": {"type": "string", "description": "A file path relative to the repository's root."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "At most this many lines."},
            "mode": {"type": "string", "enum": ["read", "write", "append", "replace"]},
            "items": {"type": "array", "items": _schema(depth - 1, i)},
            "nested": _schema(depth - 1, i + 1),
        },
        "required": ["path"],
        "additionalProperties": False,
    }


def agent_body(stream: bool, tools: int = 30, rounds: int = 45) -> bytes:
    """A coding agent's request: a long system prompt, ``tools`` tools with nested
    schemas, and ``rounds`` tool-call round trips whose results are source files,
    some of them not ASCII (about 150 KB with the defaults)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM * 40},
        {"role": "user", "content": "Fix the failing settlement test and explain the cause. " + NON_ASCII},
    ]
    for r in range(rounds):
        call_id = f"call_{r:04d}"
        messages.append({
            "role": "assistant", "content": f"Reading module {r} to see how it settles.",
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": f"tool_{r % tools}", "arguments": orjson.dumps({"path": f"src/module_{r}.py", "limit": 200}).decode()}}],
        })  # fmt: skip
        result = SOURCE * 4 + (NON_ASCII if r % 5 == 0 else "")
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": messages,
        "tools": [
            {"type": "function", "function": {"name": f"tool_{i}", "description": f"Tool {i}: reads, searches or edits files. " * 3,
                                              "parameters": _schema(2, i)}}
            for i in range(tools)
        ],  # fmt: skip
        "max_tokens": 4096,
        "temperature": 0,
    }
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return orjson.dumps(body)
