"""A fake Gemini upstream for tests: an aiohttp app that speaks the real wire format.

It serves ``POST /{version}/models/{model}:{method}`` for ``generateContent``,
``streamGenerateContent`` (``?alt=sse`` frames ``data: {json}\\r\\n\\r\\n``, else one
JSON array), ``countTokens``, ``embedContent`` and ``batchEmbedContents``, and ``GET
/{version}/models``: ``models`` in pages of ``pageSize`` (default 50, at most 1000)
from an opaque ``pageToken``, ``{"models": [...], "nextPageToken": ...}`` with the
empty list and the last page's token left out, as Google does. It checks the ``x-goog-api-key`` it receives as Google does (a
wrong key is a 400 ``API_KEY_INVALID``, none a 403), echoes the last user text,
reports ``usageMetadata``, answers with a function call (no id, with a thought
signature, as Gemini does) when told to, records every request, and can be told to
fail (a :class:`gateway_core.testing.Fault`): an error status, a connection dropped
mid-stream, a slow first byte, malformed JSON.
"""

from __future__ import annotations

import base64
from typing import Any

import attrs
import orjson
from aiohttp import web

from gateway_core.testing import FakeUpstream, Fault

EXPECTED_KEY = "sk-upstream-test"
SIGNATURE = "c2lnbmF0dXJlLWZha2U="
GENERATE = ["generateContent", "countTokens", "createCachedContent", "batchGenerateContent"]


def model_entry(model: str, methods: list[str]) -> dict[str, Any]:
    """A model as ``models.list`` gives it."""
    return {"name": f"models/{model}", "version": "001", "displayName": model.replace("-", " ").title(), "description": f"{model} (fake)",
            "inputTokenLimit": 1048576, "outputTokenLimit": 65536, "supportedGenerationMethods": methods}  # fmt: skip


MODELS = (
    model_entry("gemini-2.5-flash", GENERATE),
    model_entry("gemini-2.5-pro", GENERATE),
    model_entry("gemini-embedding-001", ["embedContent", "countTokens", "countTextTokens"]),
    model_entry("imagen-4.0-generate-001", ["predict"]),
    model_entry("gemini-2.5-flash-live", ["bidiGenerateContent"]),
)
__all__ = ["EXPECTED_KEY", "FakeGemini", "Fault"]


@attrs.define
class FakeGemini(FakeUpstream):
    api_key: str | None = EXPECTED_KEY
    function_call: dict[str, Any] | None = None  # {"name": ..., "args": {...}}: answer with this call
    thoughts: bool = False  # answer with a thought part first
    cached_tokens: int = 0
    tool_use_prompt_tokens: int = 0  # reported as toolUsePromptTokenCount (a built-in tool's results read as input)
    chunk_extra: dict[str, Any] | None = None  # more fields on every chunk (newer API versions' fields)
    models: list[dict[str, Any]] = attrs.field(factory=lambda: list(MODELS))  # what GET /{version}/models lists

    malformed_body = b'{"candidates": ['

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/{version}/models/{target}", self.dispatch)
        router.add_get("/{version}/models", self.list_models)

    def check(self, request: web.Request, body: Any) -> web.Response | None:
        key = request.headers.get("x-goog-api-key")
        if key is None:
            return error_response(403, "Method doesn't allow unregistered callers (callers without established identity). "
                                  "Please use API Key or other form of API consumer identity to call this API.", "PERMISSION_DENIED")
        if self.api_key is not None and key != self.api_key:
            info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"}}  # fmt: skip
            return error_response(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT", [info])
        return None

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"code": status, "message": message, "status": "INTERNAL"}}

    async def list_models(self, request: web.Request) -> web.StreamResponse:
        fault, refusal = await self.admit(request, None)
        if refusal is not None:
            return refusal
        size = int(request.query.get("pageSize") or 50)
        size = min(size, 1000) if size > 0 else 50
        token = request.query.get("pageToken")
        try:
            start = int(base64.urlsafe_b64decode(token.encode()).decode().removeprefix("after:")) if token else 0
        except ValueError:
            return error_response(400, "Invalid page token.", "INVALID_ARGUMENT")
        page: dict[str, Any] = {}
        if self.models[start : start + size]:
            page["models"] = self.models[start : start + size]
        if start + size < len(self.models):
            page["nextPageToken"] = base64.urlsafe_b64encode(f"after:{start + size}".encode()).decode()
        return self.answer(page, fault)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        model, _, method = request.match_info["target"].rpartition(":")
        body = await request.json()
        fault, refusal = await self.admit(request, body, model=model, method=method)
        if refusal is not None:
            return refusal
        if method == "countTokens":
            return self.answer({"totalTokens": prompt_tokens(body.get("generateContentRequest") or body)})
        if method in ("embedContent", "batchEmbedContents"):
            return self.answer(embeddings(body, method))
        if method == "streamGenerateContent":
            return await self.stream_chunks(request, model, body, fault)
        return self.answer(merge(list(self.chunks(model, body))), fault)

    async def stream_chunks(self, request: web.Request, model: str, body: dict[str, Any], fault: Fault) -> web.StreamResponse:
        """``?alt=sse``: ``data: {json}\\r\\n\\r\\n`` frames; else one JSON array, element by element."""
        datas = [orjson.dumps(chunk) for chunk in self.chunks(model, body)]
        if request.query.get("alt") == "sse":
            frames = [b"data: " + data + b"\r\n\r\n" for data in datas]
            return await self.stream(request, frames, fault, malformed_chunk=b"data: {not json}\r\n\r\n")
        elements = [(b"[" if n == 0 else b",\r\n") + data for n, data in enumerate(datas)]
        return await self.stream(request, elements, fault, content_type="application/json", end=b"]", malformed_chunk=b",\r\n{not json}")

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
            out: dict[str, Any] = {"candidates": [candidate], **base, **(self.chunk_extra or {})}
            out["usageMetadata"] = usage or {"promptTokenCount": prompt, "totalTokenCount": prompt}
            return out

        thoughts = 0
        if self.thoughts:
            thoughts = 5
            yield chunk([{"text": "Thinking about it.", "thought": True}])
        if self.function_call is not None:
            call = {"functionCall": {"name": self.function_call["name"], "args": self.function_call.get("args", {})}, "thoughtSignature": SIGNATURE}
            output = 7
            yield chunk([call], "STOP", usage_metadata(prompt, output, thoughts, self.cached_tokens, self.tool_use_prompt_tokens))
            return
        words = text.split(" ")
        for n, word in enumerate(words[:-1]):
            yield chunk([{"text": word + " "}])
        output = len(words)
        yield chunk([{"text": words[-1]}], "STOP", usage_metadata(prompt, output, thoughts, self.cached_tokens, self.tool_use_prompt_tokens))


def usage_metadata(prompt: int, output: int, thoughts: int, cached: int, tool_use: int = 0) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + tool_use + output + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    if cached:
        usage["cachedContentTokenCount"] = cached
    if tool_use:
        usage["toolUsePromptTokenCount"] = tool_use
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
    return {**{k: v for k, v in last.items() if k != "candidates"}, "candidates": [candidate]}


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

