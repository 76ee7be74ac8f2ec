"""A fake OpenAI Realtime upstream (``GET /v1/realtime?model=…`` upgraded to a
WebSocket) speaking the API's event shapes, for the adapter's tests.

On connect it sends ``session.created``; it answers ``session.update`` with
``session.updated`` and ``conversation.item.create`` with
``conversation.item.created``, takes ``input_audio_buffer.append`` silently,
and answers ``response.create`` with a whole response: ``response.created``,
``response.output_item.added``, ``response.content_part.added``, an audio delta,
the transcript word by word (``response.output_audio_transcript.delta``), the
``…done`` events and ``response.done`` with its ``usage``. Usage is computed
from what the session received (:func:`usage_for`), and every usage sent is
kept in :attr:`FakeRealtime.usages`.

Modes: ``hold`` starts each response and waits for ``response.cancel``, then
ends it ``cancelled`` (with usage); ``drop_mid_response`` cuts the connection
after the first transcript delta.
"""

from __future__ import annotations

import asyncio
import base64
from itertools import count
from typing import Any

import attrs
import orjson
from aiohttp import WSMsgType, web

from gateway_core.testing import FakeUpstream

EXPECTED_KEY = "sk-upstream-test"
ANSWER = "Hello from the realtime fake"
AUDIO_TOKENS = 7  # output audio tokens of every response


@attrs.define
class FakeRealtime(FakeUpstream):
    api_key: str | None = EXPECTED_KEY
    hold: bool = False
    drop_mid_response: bool = False
    sessions: list[dict[str, Any]] = attrs.field(factory=list)  # per connection: headers, model, received events
    usages: list[dict[str, Any]] = attrs.field(factory=list)
    cancels: int = 0
    _ids: Any = attrs.field(factory=count)

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/v1/realtime", self.realtime)

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}

    async def realtime(self, request: web.Request) -> web.StreamResponse:
        _, refusal = await self.admit(request, {}, model=request.query.get("model"))
        if refusal is not None:
            return refusal
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        record: dict[str, Any] = {"headers": dict(request.headers), "model": request.query.get("model"), "received": []}
        self.sessions.append(record)
        await self._send(ws, "session.created", session=self._session(record["model"]))
        responding: set[asyncio.Task[bool]] = set()
        try:
            await self._serve(ws, request, record, responding)
        finally:
            for task in responding:
                task.cancel()
        return ws

    async def _serve(self, ws: web.WebSocketResponse, request: web.Request, record: dict[str, Any], responding: set[asyncio.Task[bool]]) -> None:
        running: asyncio.Future[None] | None = None
        async for message in ws:
            if message.type is not WSMsgType.TEXT:
                continue
            event = orjson.loads(message.data)
            record["received"].append(event)
            kind = event.get("type")
            if kind == "session.update":
                await self._send(ws, "session.updated", session={**self._session(record["model"]), **(event.get("session") or {})})
            elif kind == "conversation.item.create":
                item = {"id": f"item_{next(self._ids)}", "object": "realtime.item", **(event.get("item") or {}), "status": "completed"}
                await self._send(ws, "conversation.item.created", previous_item_id=None, item=item)
            elif kind == "response.create":
                running = asyncio.get_running_loop().create_future()
                responding.add(asyncio.ensure_future(self._respond(ws, request, record, running)))
            elif kind == "response.cancel" and running is not None and not running.done():
                self.cancels += 1
                running.set_result(None)
                await self._done(ws, record, "cancelled", [])

    async def _respond(self, ws: web.WebSocketResponse, request: web.Request, record: dict[str, Any], running: asyncio.Future[None]) -> bool:
        """Play one response; ``False`` when the connection was dropped."""
        response_id, item_id = f"resp_{next(self._ids)}", f"item_{next(self._ids)}"
        record["response_id"] = response_id
        at = {"response_id": response_id, "item_id": item_id, "output_index": 0, "content_index": 0}
        await self._send(ws, "response.created", response=self._response(response_id, "in_progress", [], None))
        item = {"id": item_id, "object": "realtime.item", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        await self._send(ws, "response.output_item.added", response_id=response_id, output_index=0, item=item)
        await self._send(ws, "response.content_part.added", **at, part={"type": "output_audio", "transcript": ""})
        await self._send(ws, "response.output_audio.delta", **at, delta=base64.b64encode(b"\x00\x01" * 400).decode())
        words = ANSWER.split(" ")
        for n, word in enumerate(words):
            await self._send(ws, "response.output_audio_transcript.delta", **at, delta=word if n == 0 else " " + word)
            if self.drop_mid_response:
                assert request.transport is not None
                request.transport.close()  # cut, with no close frame
                return False
            if self.hold:
                await running  # until response.cancel
                return True
        await self._send(ws, "response.output_audio.done", **at)
        await self._send(ws, "response.output_audio_transcript.done", **at, transcript=ANSWER)
        part = {"type": "output_audio", "transcript": ANSWER}
        await self._send(ws, "response.content_part.done", **at, part=part)
        done_item = {**item, "status": "completed", "content": [part]}
        await self._send(ws, "response.output_item.done", response_id=response_id, output_index=0, item=done_item)
        running.set_result(None)
        await self._done(ws, record, "completed", [done_item])
        return True

    async def _done(self, ws: web.WebSocketResponse, record: dict[str, Any], status: str, output: list[Any]) -> None:
        usage = usage_for(record["received"], status)
        self.usages.append(usage)
        await self._send(ws, "response.done", response=self._response(record["response_id"], status, output, usage))

    async def _send(self, ws: web.WebSocketResponse, kind: str, **fields: Any) -> None:
        await ws.send_str(orjson.dumps({"type": kind, "event_id": f"event_{next(self._ids)}", **fields}).decode())

    def _session(self, model: str | None) -> dict[str, Any]:
        return {"type": "realtime", "object": "realtime.session", "id": "sess_fake", "model": model,
                "output_modalities": ["audio"], "instructions": "", "tools": [], "tool_choice": "auto"}  # fmt: skip

    def _response(self, response_id: str, status: str, output: list[Any], usage: dict[str, Any] | None) -> dict[str, Any]:
        return {"id": response_id, "object": "realtime.response", "status": status, "status_details": None,
                "output": output, "conversation_id": "conv_fake", "output_modalities": ["audio"], "usage": usage}  # fmt: skip


def usage_for(received: list[dict[str, Any]], status: str) -> dict[str, Any]:
    """A response's usage: input from the text the session received so far (and
    any audio), output the transcript's words and :data:`AUDIO_TOKENS` (a
    cancelled response: one word, no audio); a tenth of the input cached."""
    text = sum(len(orjson.dumps(e)) for e in received if e.get("type") == "conversation.item.create")
    audio = sum(len(str(e.get("audio", ""))) for e in received if e.get("type") == "input_audio_buffer.append")
    text_in, audio_in = 10 + text // 4, audio // 100
    cached = (text_in + audio_in) // 10
    text_out, audio_out = (len(ANSWER.split(" ")), AUDIO_TOKENS) if status == "completed" else (1, 0)
    return {
        "total_tokens": text_in + audio_in + text_out + audio_out,
        "input_tokens": text_in + audio_in,
        "output_tokens": text_out + audio_out,
        "input_token_details": {"text_tokens": text_in, "audio_tokens": audio_in, "image_tokens": 0, "cached_tokens": cached,
                                "cached_tokens_details": {"text_tokens": cached, "audio_tokens": 0, "image_tokens": 0}},
        "output_token_details": {"text_tokens": text_out, "audio_tokens": audio_out},
    }  # fmt: skip
