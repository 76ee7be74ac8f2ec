"""A fake upstream for the tests: it speaks the real wire, over loopback HTTP.

It echoes the last user message (``echo: …``), word by word when streaming,
counts tokens as words, lists ``models`` at ``GET /api/tags``, records every
request, and plays the faults a test queues with ``fail_next`` (see
``gateway_core.testing.Fault``).
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson
from aiohttp import web

from gateway_core.testing import FakeUpstream

EXPECTED_KEY = "sk-upstream-test"


@attrs.define
class FakeSkeleton(FakeUpstream):
    api_key: str | None = EXPECTED_KEY
    models: list[str] = attrs.field(factory=lambda: ["tiny-1b", "small-3b"])

    malformed_body = b'{"message": {"content": '
    malformed_chunk = b"{not json}\n"
    error_event = b'{"error": "fake failure mid-stream"}\n'

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/api/chat", self.chat)
        router.add_get("/api/tags", self.tags)

    def error_body(self, status: int, message: str) -> Any:
        return {"error": message}

    async def tags(self, request: web.Request) -> web.StreamResponse:
        fault, refusal = await self.admit(request, None)
        listed = [{"name": name, "model": name, "size": 1_000_000, "details": {"format": "gguf"}} for name in self.models]
        return refusal or self.answer({"models": listed}, fault)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refusal = await self.admit(request, body)
        if refusal is not None:
            return refusal
        user = [m["content"] for m in body["messages"] if m["role"] == "user"]
        words = f"echo: {user[-1] if user else ''}".split(" ")
        counts = {"prompt_eval_count": sum(len(m["content"].split()) for m in body["messages"]), "eval_count": len(words)}
        last = {"model": body["model"], "created_at": "2026-01-01T00:00:00Z", "done": True, "done_reason": "stop", **counts}
        if not body.get("stream"):
            return self.answer({**last, "message": {"role": "assistant", "content": " ".join(words)}}, fault)
        lines = [
            orjson.dumps({"model": body["model"], "message": {"role": "assistant", "content": word if n == 0 else " " + word}, "done": False}) + b"\n"
            for n, word in enumerate(words)
        ]
        end = orjson.dumps({**last, "message": {"role": "assistant", "content": ""}}) + b"\n"
        return await self.stream(request, lines, fault, content_type="application/x-ndjson", end=end)
