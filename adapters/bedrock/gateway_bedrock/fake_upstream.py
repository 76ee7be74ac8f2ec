"""A fake Amazon Bedrock Runtime for tests, speaking the real wire: Converse and
ConverseStream (``POST /model/{modelId}/converse`` and ``/converse-stream``, the
stream in AWS's binary event-stream framing), and InvokeModel and
InvokeModelWithResponseStream with Anthropic's Bedrock body for Claude
(``/invoke`` and ``/invoke-with-response-stream``: :mod:`.fake_invoke`); and the
control plane's ``GET /foundation-models`` and ``GET /inference-profiles``
(:mod:`.fake_control`), on the same server.

Each request's SigV4 signature is recomputed with botocore from what arrived
(the raw path, the signed headers, the body) and refused as Bedrock refuses it: an
unknown access key (or a missing or wrong session token for temporary credentials,
``session_tokens``) is a 403 ``UnrecognizedClientException``, an expired token
(``expired_tokens``) a 403 ``ExpiredTokenException``, a wrong signature a 403
``InvalidSignatureException``, a signature for another region a 403 too. A
Bedrock API key (``Authorization: Bearer``) is accepted when it is
``bearer_key``. Errors carry ``x-amzn-ErrorType`` and ``{"message": …}``.

It echoes the last user text (``echo: …``), answers with ``reasoning`` first when
the request asks Claude to think, calls ``tool_use`` (``{"name", "input"}``) when
set and the last turn is not a tool result, and reports usage: input tokens are
the words of every text sent, output tokens the words answered, plus
``cache_read`` and ``cache_write``. A :class:`gateway_core.testing.Fault`'s
``error_after`` sends the exception message ``stream_exception`` mid-stream.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson
from aiohttp import web
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

from gateway_core.testing import FakeUpstream, Fault

from .eventstream import encode_message
from .fake_control import foundation_models, inference_profiles
from .fake_invoke import REASONING, SIGNATURE, claude_chunks, claude_message, invalid_body

ACCESS_KEY_ID = "AKIAFAKEBEDROCK00001"
SECRET_ACCESS_KEY = "fake/secret+access+key/0123456789abcdefghij"
IAM_KEY = f"{ACCESS_KEY_ID}:{SECRET_ACCESS_KEY}"
BEARER_KEY = "ABSKZmFrZS1iZWRyb2NrLWFwaS1rZXk="
REGION = "us-east-1"
ERROR_TYPES = {
    400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException", 408: "ModelTimeoutException",
    424: "ModelErrorException", 429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException",
}  # fmt: skip
BAD_SIGNATURE = ("The request signature we calculated does not match the signature you provided. Check your AWS "
                 "Secret Access Key and signing method. Consult the service documentation for details.")  # fmt: skip
RAW_BODY = web.RequestKey("raw_body", bytes)
__all__ = ["BEARER_KEY", "IAM_KEY", "REASONING", "SIGNATURE", "FakeBedrock", "Fault", "encode_event"]


def encode_event(name: str, payload: dict[str, Any]) -> bytes:
    """One event message as Bedrock sends it (with its ``p`` padding)."""
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, orjson.dumps({**payload, "p": "abcdefghij"}))


def encode_exception(name: str, message: str) -> bytes:
    headers = {":exception-type": name, ":content-type": "application/json", ":message-type": "exception"}
    return encode_message(headers, orjson.dumps({"message": message}))


@attrs.define
class FakeBedrock(FakeUpstream):
    api_key: str | None = None  # unused: credentials below
    credentials: dict[str, str] = attrs.field(factory=lambda: {ACCESS_KEY_ID: SECRET_ACCESS_KEY})
    session_tokens: dict[str, str] = attrs.field(factory=dict)  # access key id → the token it needs (temporary credentials)
    expired_tokens: set[str] = attrs.field(factory=set)
    bearer_key: str = BEARER_KEY
    region: str = REGION
    tool_use: dict[str, Any] | None = None
    cache_read: int = 0
    cache_write: int = 0
    stream_exception: str = "modelStreamErrorException"
    profiles_page: int = 2  # inference profiles a page

    malformed_body = b'{"output": {"message": '

    @property
    def error_event(self) -> bytes:  # type: ignore[override]
        return encode_exception(self.stream_exception, f"fake {self.stream_exception} mid-stream")

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post(r"/model/{model:.+}/{action:converse|converse-stream}", self.converse)
        router.add_post(r"/model/{model:.+}/{action:invoke|invoke-with-response-stream}", self.invoke)
        router.add_get("/foundation-models", self.control)
        router.add_get("/inference-profiles", self.control)

    def error_body(self, status: int, message: str) -> Any:
        return {"message": message}

    def error(self, status: int, message: str, headers: dict[str, str] | None = None, kind: str | None = None) -> web.Response:
        named = {"x-amzn-ErrorType": f"{kind or ERROR_TYPES.get(status, 'InternalServerException')}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
        return super().error(status, message, {**named, **(headers or {})})

    def check(self, request: web.Request, body: Any) -> web.Response | None:
        authorization = request.headers.get("Authorization", "")
        if authorization.startswith("Bearer "):
            if authorization.removeprefix("Bearer ") == self.bearer_key:
                return None
            return self.error(403, "Invalid API Key format: Must start with pre-defined prefix", kind="AccessDeniedException")
        if not authorization.startswith("AWS4-HMAC-SHA256 "):
            return self.error(403, "Missing Authentication Token", kind="MissingAuthenticationTokenException")
        fields = dict(item.strip().split("=", 1) for item in authorization.removeprefix("AWS4-HMAC-SHA256 ").split(","))
        key_id, _, region, service, _ = fields["Credential"].split("/")
        secret = self.credentials.get(key_id)
        if secret is None:
            return self.error(403, "The security token included in the request is invalid.", kind="UnrecognizedClientException")
        token = request.headers.get("X-Amz-Security-Token")
        if token is not None and token in self.expired_tokens:
            return self.error(403, "The security token included in the request is expired", kind="ExpiredTokenException")
        if self.session_tokens.get(key_id) != token:
            return self.error(403, "The security token included in the request is invalid.", kind="UnrecognizedClientException")
        if region != self.region or service != "bedrock":
            return self.error(403, f"Credential should be scoped to a valid region, not '{region}'.", kind="InvalidSignatureException")
        signed = {name: request.headers.get(name, "") for name in fields["SignedHeaders"].split(";")}
        aws = AWSRequest(method=request.method, url=f"http://{request.host}{request.raw_path}", data=request[RAW_BODY], headers=signed)
        aws.context["timestamp"] = request.headers.get("X-Amz-Date", "")
        signer = SigV4Auth(ReadOnlyCredentials(key_id, secret, request.headers.get("X-Amz-Security-Token")), service, region)
        expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
        if expected != fields["Signature"]:
            return self.error(403, BAD_SIGNATURE, kind="InvalidSignatureException")
        return None

    async def converse(self, request: web.Request) -> web.StreamResponse:
        request[RAW_BODY] = raw = await request.read()
        body = orjson.loads(raw)
        fault, refused = await self.admit(request, body, raw_path=request.raw_path, model=request.match_info["model"])
        if refused is not None:
            return refused
        blocks, usage = self._answer(body)
        if request.match_info["action"] == "converse":
            stop = "tool_use" if any("toolUse" in block for block in blocks) else "end_turn"
            answer = {"output": {"message": {"role": "assistant", "content": blocks}}, "stopReason": stop,
                      "usage": usage, "metrics": {"latencyMs": 12}}  # fmt: skip
            response = self.answer(answer, fault)
            response.headers["x-amzn-RequestId"] = "req-fake-1"
            return response
        return await self.stream(request, self._events(blocks, usage), fault, content_type="application/vnd.amazon.eventstream")

    async def invoke(self, request: web.Request) -> web.StreamResponse:
        request[RAW_BODY] = raw = await request.read()
        body, model = orjson.loads(raw), request.match_info["model"]
        fault, refused = await self.admit(request, body, raw_path=request.raw_path, model=model)
        if refused is not None:
            return refused
        invalid = invalid_body(body, model)
        if invalid is not None:
            return self.error(400, invalid)
        message = claude_message(body, model, self.tool_use, self.cache_read, self.cache_write)
        if request.match_info["action"] == "invoke":
            response = self.answer(message, fault)
            usage = message["usage"]
            response.headers.update({"x-amzn-RequestId": "req-fake-1", "X-Amzn-Bedrock-Input-Token-Count": str(usage["input_tokens"]),
                                     "X-Amzn-Bedrock-Output-Token-Count": str(usage["output_tokens"])})  # fmt: skip
            return response
        return await self.stream(request, claude_chunks(message), fault, content_type="application/vnd.amazon.eventstream")

    async def control(self, request: web.Request) -> web.StreamResponse:
        """The control plane's listings (:mod:`.fake_control`)."""
        request[RAW_BODY] = await request.read()
        _, refused = await self.admit(request, None, raw_path=request.raw_path)
        if refused is not None:
            return refused
        if request.path == "/foundation-models":
            return self.answer(foundation_models(request.query.get("byOutputModality")))
        return self.answer(inference_profiles(request.query.get("nextToken"), min(self.profiles_page, int(request.query.get("maxResults", "1000")))))

    def _answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
        texts = [block["text"] for block in body.get("system", []) if "text" in block]
        for message in body["messages"]:
            texts.extend(block["text"] for block in message["content"] if "text" in block)
        last = body["messages"][-1]["content"]
        said = next((block["text"] for block in reversed(last) if "text" in block), "")
        blocks: list[dict[str, Any]] = []
        if (body.get("additionalModelRequestFields") or {}).get("thinking"):
            blocks.append({"reasoningContent": {"reasoningText": {"text": REASONING, "signature": SIGNATURE}}})
        if self.tool_use is not None and not any("toolResult" in block for block in last):
            blocks.append({"toolUse": {"toolUseId": "tooluse_fake01", **self.tool_use}})
        else:
            results = [block["toolResult"] for block in last if "toolResult" in block]
            if results:
                said = " ".join(inner.get("text", "") for inner in results[0]["content"])
            blocks.append({"text": f"echo: {said}"})
        output = sum(len(block["text"].split()) for block in blocks if "text" in block)
        words = sum(len(text.split()) for text in texts)
        usage = {"inputTokens": words, "outputTokens": output or 1, "totalTokens": words + (output or 1) + self.cache_read + self.cache_write}
        if self.cache_read or self.cache_write:
            usage |= {"cacheReadInputTokens": self.cache_read, "cacheWriteInputTokens": self.cache_write}
        return blocks, usage

    def _events(self, blocks: list[dict[str, Any]], usage: dict[str, int]) -> list[bytes]:
        events = [encode_event("messageStart", {"role": "assistant"})]
        for index, block in enumerate(blocks):
            at = {"contentBlockIndex": index}
            if "reasoningContent" in block:
                text = block["reasoningContent"]["reasoningText"]
                events.append(encode_event("contentBlockDelta", {**at, "delta": {"reasoningContent": {"text": text["text"]}}}))
                events.append(encode_event("contentBlockDelta", {**at, "delta": {"reasoningContent": {"signature": text["signature"]}}}))
            elif "toolUse" in block:
                tool = block["toolUse"]
                start = {"toolUse": {"toolUseId": tool["toolUseId"], "name": tool["name"]}}
                events.append(encode_event("contentBlockStart", {**at, "start": start}))
                arguments = orjson.dumps(tool["input"]).decode()
                for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                    events.append(encode_event("contentBlockDelta", {**at, "delta": {"toolUse": {"input": piece}}}))
            else:
                words = block["text"].split(" ")
                for n, word in enumerate(words):
                    text = word if n == 0 else " " + word
                    events.append(encode_event("contentBlockDelta", {**at, "delta": {"text": text}}))
            events.append(encode_event("contentBlockStop", at))
        stop = "tool_use" if any("toolUse" in block for block in blocks) else "end_turn"
        events.append(encode_event("messageStop", {"stopReason": stop}))
        events.append(encode_event("metadata", {"usage": usage, "metrics": {"latencyMs": 12}}))
        return events
