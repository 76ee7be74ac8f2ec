"""A client of the kit's ``fake`` protocol (:mod:`.fake_protocol`), for tests.

``await FakeClient(gateway.url, secret).chat("fake-small", "hello")`` sends one
chat request and returns a :class:`FakeAnswer`: the status, the headers, the JSON
body of a whole answer (or an error), and for a stream its events as they came.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import attrs
import orjson

from ..sse import SSESplitter, frame_fields
from .fake_protocol import CHAT_PATH, MODELS_PATH


@attrs.frozen
class FakeAnswer:
    status: int
    headers: dict[str, str]
    body: Any = None  # a whole answer's JSON (or an error's)
    events: tuple[Any, ...] = ()  # a stream's events (``"[END]"`` for the end)

    @property
    def text(self) -> str:
        """The answer's text, whole or streamed."""
        if isinstance(self.body, dict) and "content" in self.body:
            return str(self.body["content"])
        return "".join(e["delta"] for e in self.events if isinstance(e, dict) and "delta" in e)

    @property
    def error(self) -> dict[str, Any] | None:
        """The error of an answer (its body's, or a stream's last event's), or ``None``."""
        if isinstance(self.body, dict) and "error" in self.body:
            return dict(self.body["error"])
        last = self.events[-1] if self.events else None
        return dict(last["error"]) if isinstance(last, dict) and "error" in last else None


@attrs.define
class FakeClient:
    url: str
    key: str
    timeout: float = 30.0

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def chat(self, model: str, text: str = "hello", *, stream: bool = False, **fields: Any) -> FakeAnswer:
        """One chat request with one user message (``fields`` join the body, ``messages`` too)."""
        body = {"model": model, "messages": [{"role": "user", "content": text}], "stream": stream, **fields}
        return await self.send(body)

    async def send(self, body: Any) -> FakeAnswer:
        """POST ``body`` (JSON, or bytes as they are) to the chat route."""
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        headers = {**self.headers(), "Content-Type": "application/json"}
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session:
            async with session.post(self.url + CHAT_PATH, data=data, headers=headers) as response:
                found = dict(response.headers)
                if not response.content_type.startswith("text/event-stream"):
                    return FakeAnswer(response.status, found, orjson.loads(await response.read()))
                splitter, events = SSESplitter(), []
                async for chunk in response.content.iter_any():
                    for frame in splitter.feed(chunk):
                        _, payload = frame_fields(frame)
                        events.append("[END]" if payload.strip() == b"[END]" else orjson.loads(payload))
                return FakeAnswer(response.status, found, None, tuple(events))

    async def models(self) -> FakeAnswer:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session:
            async with session.get(self.url + MODELS_PATH, headers=self.headers()) as response:
                return FakeAnswer(response.status, dict(response.headers), orjson.loads(await response.read()))
