"""A fake upstream of the ``fake`` wire (:mod:`.fake_wire`), over loopback HTTP.

``POST /chat`` answers ``reply`` (default: ``echo: `` and the last user message),
word by word when streaming; tokens are counted as words (``max_tokens`` cuts the
answer short); ``GET /models`` lists ``models``. Like every
:class:`~gateway_core.testing.FakeUpstream` it records each request, checks the
key (``Authorization: Bearer``) and plays the faults a test queued.
"""

from __future__ import annotations

from typing import Any

import attrs
from aiohttp import web

from ..sse import data_frame
from .fake_upstream import FakeUpstream
from .fake_wire import END


@attrs.define
class FakeChat(FakeUpstream):
    reply: str | None = None
    models: list[str] = attrs.field(factory=lambda: ["fake-small", "fake-large"])

    malformed_body = b'{"content": "cut'
    malformed_chunk = b"data: {not json}\n\n"
    error_event = b'data: {"error": "fake failure mid-stream"}\n\n'

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/chat", self.chat)
        router.add_get("/models", self.list_models)

    def error_body(self, status: int, message: str) -> Any:
        return {"error": message}

    async def list_models(self, request: web.Request) -> web.StreamResponse:
        fault, refusal = await self.admit(request, None)
        return refusal or self.answer({"models": list(self.models)}, fault)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refusal = await self.admit(request, body)
        if refusal is not None:
            return refusal
        words, stop = self.answer_words(body)
        usage = {"input": sum(len(m["content"].split()) for m in body["messages"]), "output": len(words)}
        answer_id, model = f"fake-{len(self.requests)}", body["model"]
        if not body.get("stream"):
            return self.answer({"id": answer_id, "model": model, "content": "".join(words), "stop": stop, "usage": usage}, fault)
        events = [data_frame({"id": answer_id, "model": model})] + [data_frame({"delta": word}) for word in words]
        events.append(data_frame({"stop": stop, "usage": usage}))
        return await self.stream(request, events, fault, end=END)

    def answer_words(self, body: dict[str, Any]) -> tuple[list[str], str]:
        """The answer as the pieces a stream sends (a word with its leading space), and its stop reason."""
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        text = self.reply if self.reply is not None else f"echo: {users[-1] if users else ''}"
        words = text.split(" ")
        pieces = [words[0]] + [" " + word for word in words[1:]]
        cap = body.get("max_tokens")
        if isinstance(cap, int) and len(pieces) > cap:
            return pieces[:cap], "max_tokens"
        return pieces, "end_turn"
