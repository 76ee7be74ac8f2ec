"""A fake Gemini upstream for tests: an aiohttp app that speaks the real wire format.

It serves ``POST /{version}/models/{model}:{method}`` for ``generateContent``,
``streamGenerateContent`` (``?alt=sse`` frames ``data: {json}\\r\\n\\r\\n``, else one
JSON array), ``countTokens``, ``embedContent`` and ``batchEmbedContents``, and ``GET
/{version}/models``. It checks the ``x-goog-api-key`` it receives as Google does (a
wrong key is a 400 ``API_KEY_INVALID``, none a 403), echoes the last user text,
reports ``usageMetadata``, answers with a function call (no id, with a thought
signature, as Gemini does) when told to, records every request, and can be told to
fail: an error status, a connection dropped mid-stream, a slow first byte, malformed JSON.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import attrs
import orjson
from aiohttp import web

EXPECTED_KEY = "sk-upstream-test"
SIGNATURE = "c2lnbmF0dXJlLWZha2U="


@attrs.define
class Fault:
    """What to do instead of answering normally, once."""

    status: int | None = None
    body: Any = None
    headers: dict[str, str] = attrs.field(factory=dict)
    drop_after_chunks: int | None = None
    first_byte_delay: float = 0.0
    malformed: bool = False


@attrs.define
class FakeGemini:
    api_key: str = EXPECTED_KEY
    chunk_delay: float = 0.0
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    faults: deque = attrs.field(factory=deque)
    function_call: dict[str, Any] | None = None  # {"name": ..., "args": {...}}: answer with this call
    thoughts: bool = False  # answer with a thought part first
    cached_tokens: int = 0
    url: str = ""

    def fail_next(self, fault: Fault) -> None:
        self.faults.append(fault)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{version}/models/{target}", self.dispatch)
        app.router.add_get("/{version}/models", self.list_models)
        return app

    async def list_models(self, request: web.Request) -> web.Response:
        return _json({"models": [{"name": "models/gemini-fake", "supportedGenerationMethods": ["generateContent"]}]})

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        model, _, method = request.match_info["target"].rpartition(":")
        body = await request.json()
        self.requests.append({"headers": dict(request.headers), "body": body, "path": request.path_qs, "model": model, "method": method})
        key = request.headers.get("x-goog-api-key")
        if key is None:
            return error_response(403, "Method doesn't allow unregistered callers (callers without established identity). "
                                  "Please use API Key or other form of API consumer identity to call this API.", "PERMISSION_DENIED")
        if key != self.api_key:
            info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"}}  # fmt: skip
            return error_response(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT", [info])
        fault = self.faults.popleft() if self.faults else Fault()
        if fault.first_byte_delay:
            await asyncio.sleep(fault.first_byte_delay)
        if fault.status is not None:
            payload = fault.body if fault.body is not None else {"error": {"code": fault.status, "message": f"fake failure {fault.status}", "status": "INTERNAL"}}
            data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
            return web.Response(status=fault.status, body=data, headers=fault.headers, content_type="application/json")
        if method == "countTokens":
            return _json({"totalTokens": prompt_tokens(body.get("generateContentRequest") or body)})
        if method in ("embedContent", "batchEmbedContents"):
            return _json(embeddings(body, method))
        if method == "streamGenerateContent":
            return await self.stream(request, model, body, fault)
        if fault.malformed:
            return web.Response(body=b'{"candidates": [', content_type="application/json")
        chunks = list(self.chunks(model, body))
        return _json(merge(chunks))

    async def stream(self, request: web.Request, model: str, body: dict[str, Any], fault: Fault) -> web.StreamResponse:
        sse = request.query.get("alt") == "sse"
        content_type = "text/event-stream" if sse else "application/json"
        response = web.StreamResponse(headers={"Content-Type": content_type})
        await response.prepare(request)
        for n, chunk in enumerate(self.chunks(model, body)):
            if fault.drop_after_chunks is not None and n == fault.drop_after_chunks:
                request.transport.close()
                return response
            data = b"{not json}" if fault.malformed and n == 1 else orjson.dumps(chunk)
            if sse:
                await response.write(b"data: " + data + b"\r\n\r\n")
            else:
                await response.write((b"[" if n == 0 else b",\r\n") + data)
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
        if not sse:
            await response.write(b"]")
        await response.write_eof()
        return response

    def chunks(self, model: str, body: dict[str, Any]):
        """The answer as Gemini streams it: thoughts, text word by word or a call, then the finish."""
        base = {"modelVersion": model, "responseId": "fake-response-1"}
        text = echo_text(body)
        prompt = prompt_tokens(body)

        def chunk(parts=None, finish=None, usage=None):
            candidate: dict[str, Any] = {"index": 0}
            if parts is not None:
                candidate["content"] = {"role": "model", "parts": parts}
            if finish:
                candidate["finishReason"] = finish
            out: dict[str, Any] = {"candidates": [candidate], **base}
            out["usageMetadata"] = usage or {"promptTokenCount": prompt, "totalTokenCount": prompt}
            return out

        thoughts = 0
        if self.thoughts:
            thoughts = 5
            yield chunk([{"text": "Thinking about it.", "thought": True}])
        if self.function_call is not None:
            call = {"functionCall": {"name": self.function_call["name"], "args": self.function_call.get("args", {})}, "thoughtSignature": SIGNATURE}
            output = 7
            yield chunk([call], "STOP", usage_metadata(prompt, output, thoughts, self.cached_tokens))
            return
        words = text.split(" ")
        for n, word in enumerate(words[:-1]):
            yield chunk([{"text": word + " "}])
        output = len(words)
        yield chunk([{"text": words[-1]}], "STOP", usage_metadata(prompt, output, thoughts, self.cached_tokens))


def usage_metadata(prompt: int, output: int, thoughts: int, cached: int) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    if cached:
        usage["cachedContentTokenCount"] = cached
    return usage


def merge(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A whole answer from its streamed chunks: parts joined, the last finish and usage."""
    parts: list[dict[str, Any]] = []
    for chunk in chunks:
        for part in chunk["candidates"][0].get("content", {}).get("parts", []):
            if parts and "text" in part and "text" in parts[-1] and part.get("thought") == parts[-1].get("thought"):
                parts[-1] = {**parts[-1], "text": parts[-1]["text"] + part["text"]}
            else:
                parts.append(dict(part))
    last = chunks[-1]
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": last["candidates"][0].get("finishReason", "STOP"), "index": 0}
    return {"candidates": [candidate], "usageMetadata": last["usageMetadata"], "modelVersion": last["modelVersion"], "responseId": last["responseId"]}


def echo_text(body: dict[str, Any]) -> str:
    for content in reversed(body.get("contents") or []):
        if content.get("role", "user") != "user":
            continue
        texts, results = [], []
        for part in content.get("parts") or []:
            if "text" in part:
                texts.append(part["text"])
            elif "functionResponse" in part:
                response = part["functionResponse"]
                results.append(f"{response.get('name')} gave {orjson.dumps(response.get('response')).decode()}")
        if results:
            return "echo: " + "; ".join(results)
        return "echo: " + " ".join(texts)
    return "echo:"


def prompt_tokens(body: dict[str, Any]) -> int:
    return len(orjson.dumps(body.get("contents") or [])) // 4 + 1


def embeddings(body: dict[str, Any], method: str) -> dict[str, Any]:
    requests = body.get("requests") if method == "batchEmbedContents" else [body]
    out = []
    for request in requests or []:
        text = " ".join(p.get("text", "") for p in (request.get("content") or {}).get("parts") or [])
        size = int(request.get("outputDimensionality") or 8)
        out.append({"values": [round((len(text) + i) / 100.0, 4) for i in range(size)]})
    if method == "embedContent":
        return {"embedding": out[0]}
    return {"embeddings": out}


def error_response(status: int, message: str, status_name: str, details: list | None = None) -> web.Response:
    error: dict[str, Any] = {"code": status, "message": message, "status": status_name}
    if details:
        error["details"] = details
    return web.Response(status=status, body=orjson.dumps({"error": error}), content_type="application/json")


def _json(payload: Any) -> web.Response:
    return web.Response(body=orjson.dumps(payload), content_type="application/json")
