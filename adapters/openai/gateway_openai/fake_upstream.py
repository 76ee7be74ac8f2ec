"""A fake OpenAI upstream for tests: an aiohttp app that speaks the real wire format.

It answers ``POST /v1/chat/completions`` plainly or as an SSE stream (pausing
``chunk_delay`` seconds between chunks), echoes the last user message, reports
usage, records every request it received, and can be told to fail (a
:class:`gateway_core.testing.Fault`): an error status, a connection dropped
mid-stream, a slow first byte, malformed JSON. Like OpenAI, it refuses ``max_tokens``
on chat for its reasoning models (names starting ``o1``/``o3``/``o4``/``gpt-5``),
refuses ``top_logprobs`` without ``logprobs: true``, ``reasoning_effort`` for OpenAI's models that do not reason (``gpt-4…``) or beside a
``temperature`` or ``top_p`` other than 1 and values it does not know, and
reports the reasoning tokens of an effort (:data:`REASONING_TOKENS`) inside
``completion_tokens``.
It also serves ``/v1/responses`` (:mod:`.fake_responses`), ``/v1/embeddings``,
``/v1/images/generations``, ``/v1/images/edits``, ``/v1/audio/speech`` and
``/v1/audio/transcriptions`` (:mod:`.fake_media`; images streamed too, with partial images), and ``/v1/completions``,
``/v1/moderations``, ``/v1/audio/translations`` and rerank (``/v1/rerank`` in
Jina's shape, ``/v2/rerank`` in Cohere's) (:mod:`.fake_text`); multipart requests
are recorded as the fields and files that arrived. ``GET /v1/models`` lists
``models`` as OpenAI does (``{"object": "list", "data": [{"id", "object", "created",
"owned_by"}]}``, one page).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import attrs
import orjson
from aiohttp import web

from gateway_core.testing import FakeUpstream, Fault

from . import fake_media, fake_responses, fake_text

EXPECTED_KEY = "sk-upstream-test"
REASONING_MODELS = ("o1", "o3", "o4", "gpt-5")
NON_REASONING_MODELS = ("gpt-4", "gpt-3.5", "chatgpt-4o")  # OpenAI's own refuse reasoning_effort (other names: a compatible server)
REASONING_TOKENS = {"minimal": 0, "low": 64, "medium": 256, "high": 1024}  # reported per reasoning_effort (chat)
MODELS = ("gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "o3-mini")
__all__ = ["EXPECTED_KEY", "FakeOpenAI", "Fault"]


@attrs.define
class FakeOpenAI(FakeUpstream):
    api_key: str | None = EXPECTED_KEY
    tool_call: dict[str, Any] | None = None  # answer with this tool call instead of text
    report_usage: bool = True  # False: answers carry no usage (as some compatible servers do)
    cached_tokens: int = 0  # prompt tokens the usage reports as read from the prompt cache
    kept: dict[str, Any] = attrs.field(factory=dict)  # stored Responses answers, by id (GET/DELETE /v1/responses/{id})
    image_hold: asyncio.Event | None = None  # streamed images: the completed events wait for it
    partial_image_bytes: int = 0  # streamed images: the size of each partial image (0: a 1-pixel PNG)
    extra_events: list[dict[str, Any]] | None = None  # Responses streams: events of other types, after in_progress
    models: list[str] = attrs.field(factory=lambda: list(MODELS))  # what GET /v1/models lists

    malformed_body = b'{"id": "chatcmpl-broken", "choices": ['

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/chat/completions", self.chat)
        router.add_post("/v1/responses", self.responses)
        router.add_get("/v1/responses/{id}", self.stored_response)
        router.add_delete("/v1/responses/{id}", self.stored_response)
        router.add_post("/v1/embeddings", self.embeddings)
        router.add_post("/v1/images/generations", self.images)
        router.add_post("/v1/images/edits", self.image_edits)
        router.add_post("/v1/audio/speech", self.speech)
        router.add_post("/v1/audio/transcriptions", self.transcriptions)
        router.add_post("/v1/completions", self.completions)
        router.add_post("/v1/moderations", self.moderations)
        router.add_post("/v1/audio/translations", self.translations)
        router.add_post("/v1/rerank", self.rerank)
        router.add_post("/v2/rerank", self.rerank)
        router.add_get("/v1/models", self.model_list)

    def check(self, request: web.Request, body: Any) -> web.Response | None:
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return error_response(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        model = body.get("model") if isinstance(body, dict) else None
        if request.path == "/v1/chat/completions" and isinstance(body, dict) and "max_tokens" in body and str(model).startswith(REASONING_MODELS):
            message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
            return error_response(400, message, "invalid_request_error", "unsupported_parameter")
        if request.path == "/v1/chat/completions" and isinstance(body, dict) and "top_logprobs" in body and body.get("logprobs") is not True:
            return error_response(400, "'logprobs' must be set to true when 'top_logprobs' is used.", "invalid_request_error", "invalid_value")
        effort = body.get("reasoning_effort") if isinstance(body, dict) and request.path == "/v1/chat/completions" else None
        if effort is not None and str(model).startswith(NON_REASONING_MODELS):
            message = "Unrecognized request argument supplied: reasoning_effort"
            return error_response(400, message, "invalid_request_error", "unsupported_parameter")
        if effort is not None and any(body.get(key) not in (None, 1) for key in ("temperature", "top_p")):
            message = "Unsupported value: 'temperature' does not support this value with this model. Only the default (1) value is supported."
            return error_response(400, message, "invalid_request_error", "unsupported_value")
        if effort is not None and effort not in REASONING_TOKENS:
            message = f"Invalid value: '{effort}'. Supported values are: 'minimal', 'low', 'medium', and 'high'."
            return error_response(400, message, "invalid_request_error", "unsupported_value")
        return None

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refusal = await self.admit(request, body)
        if refusal is not None:
            return refusal
        text = echo_text(body)
        usage = usage_for(body, text, self.cached_tokens) if self.report_usage else None
        if body.get("stream"):
            include_usage = (body.get("stream_options") or {}).get("include_usage") is True
            chunks = [b"data: " + orjson.dumps(c) + b"\n\n" for c in stream_chunks(body, text, usage, include_usage, self.tool_call)]
            return await self.stream(request, chunks, fault, end=b"data: [DONE]\n\n")
        return self.answer(completion(body, text, usage, self.tool_call), fault)

    async def responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refusal = await self.admit(request, body)
        if refusal is not None:
            return refusal
        if not body.get("stream"):
            answer = fake_responses.complete(body, self.tool_call)
            if body.get("store") is not False:
                self.kept[answer["id"]] = answer
            return self.answer(answer)
        events = list(fake_responses.events(body, self.tool_call, self.extra_events))
        frames = [b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events]
        return await self.stream(request, frames, fault)

    async def stored_response(self, request: web.Request) -> web.StreamResponse:
        _, refusal = await self.admit(request, {})
        if refusal is not None:
            return refusal
        response_id = request.match_info["id"]
        if response_id not in self.kept:
            return error_response(404, f"Response with id '{response_id}' not found.", "invalid_request_error", None)
        if request.method == "DELETE":
            del self.kept[response_id]
            return self.answer({"id": response_id, "object": "response", "deleted": True})
        return self.answer(self.kept[response_id])

    async def embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refusal = await self.admit(request, body)
        return refusal or self.answer(fake_media.embeddings(body))

    async def images(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refusal = await self.admit(request, body)
        if refusal is None and body.get("stream"):
            events = fake_media.image_events("image_generation", body, self.partial_image_bytes)
            return await fake_media.image_stream(request, events, self.image_hold, fault)
        return refusal or self.answer(fake_media.images(body.get("model") or "", int(body.get("n") or 1), body.get("response_format")))

    async def image_edits(self, request: web.Request) -> web.StreamResponse:
        form = await fake_media.read_form(request)
        fault, refusal = await self.admit(request, form)
        fields = form["fields"]
        if refusal is None and fields.get("stream") == "true":
            events = fake_media.image_events("image_edit", fields, self.partial_image_bytes)
            return await fake_media.image_stream(request, events, self.image_hold, fault)
        return refusal or self.answer(fake_media.images(fields.get("model", ""), int(fields.get("n") or 1), fields.get("response_format")))

    async def speech(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refusal = await self.admit(request, body)
        return refusal or await fake_media.speech(request, body, self.chunk_delay)

    async def transcriptions(self, request: web.Request) -> web.StreamResponse:
        form = await fake_media.read_form(request)
        _, refusal = await self.admit(request, form)
        fields = form["fields"]
        if refusal is None and fields.get("stream") == "true":
            return await fake_media.transcription_stream(request)
        return refusal or fake_media.transcription(fields.get("model", ""), fields.get("response_format") or "json")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refusal = await self.admit(request, body)
        if refusal is not None:
            return refusal
        if body.get("stream"):
            chunks = [b"data: " + orjson.dumps(c) + b"\n\n" for c in fake_text.completion_chunks(body, self.report_usage)]
            return await self.stream(request, chunks, fault, end=b"data: [DONE]\n\n")
        return self.answer(fake_text.completion(body, self.report_usage), fault)

    async def moderations(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refusal = await self.admit(request, body)
        return refusal or self.answer(fake_text.moderation(body))

    async def translations(self, request: web.Request) -> web.StreamResponse:
        form = await fake_media.read_form(request)
        _, refusal = await self.admit(request, form)
        fields = form["fields"]
        return refusal or fake_text.translation(fields.get("model", ""), fields.get("response_format") or "json")

    async def model_list(self, request: web.Request) -> web.StreamResponse:
        fault, refusal = await self.admit(request, None)
        data = [{"id": model, "object": "model", "created": 1_700_000_000 + n, "owned_by": "system"} for n, model in enumerate(self.models)]
        return refusal or self.answer({"object": "list", "data": data}, fault)

    async def rerank(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refusal = await self.admit(request, body)
        return refusal or self.answer(fake_text.rerank(body, cohere=request.path.startswith("/v2/")))


def error_response(status: int, message: str, type_: str, code: str | None) -> web.Response:
    payload = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return web.Response(status=status, body=orjson.dumps(payload), content_type="application/json")


def echo_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if p.get("type") == "text")
            return f"echo: {content}"
    return "echo:"


def usage_for(body: dict[str, Any], text: str, cached: int = 0) -> dict[str, Any]:
    prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages") or []) // 4 + 1 + cached
    reasoning = REASONING_TOKENS.get(str(body.get("reasoning_effort")), 0)
    completion_tokens = len(text.split()) + reasoning  # reasoning tokens are output tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def completion(body, text, usage, tool_call) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    finish = "stop"
    if tool_call is not None:
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call], "refusal": None}
        finish = "tool_calls"
    return {
        "id": "chatcmpl-fake123",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage,
        "system_fingerprint": "fp_fake",
    }


def stream_chunks(body, text, usage, include_usage, tool_call):
    base = {"id": "chatcmpl-fake123", "object": "chat.completion.chunk", "created": int(time.time()), "model": body.get("model"), "system_fingerprint": "fp_fake"}
    extra = {"usage": None} if include_usage else {}

    def chunk(delta, finish=None):
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra}

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    if tool_call is not None:
        function = tool_call["function"]
        yield chunk({"tool_calls": [{"index": 0, "id": tool_call["id"], "type": "function", "function": {"name": function["name"], "arguments": ""}}]})
        arguments = function["arguments"]
        for start in range(0, len(arguments), 5):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[start : start + 5]}}]})
        yield chunk({}, "tool_calls")
    else:
        words = text.split(" ")
        for n, word in enumerate(words):
            yield chunk({"content": word if n == 0 else " " + word})
        yield chunk({}, "stop")
    if include_usage and usage is not None:
        yield {**base, "choices": [], "usage": usage}

