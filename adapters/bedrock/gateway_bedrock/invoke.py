"""Claude through InvokeModel and InvokeModelWithResponseStream: Anthropic's Messages
body as Bedrock takes it, for a channel with ``api=invoke``.

This is the anthropic adapter's channel type
(:class:`gateway_anthropic.channel.AnthropicChannel`, its extension point) at
Bedrock's URLs: ``POST {base}/model/{modelId}/invoke`` and
``/invoke-with-response-stream``, the body without ``model`` and with
``"anthropic_version": "bedrock-2023-05-31"`` (a client's ``anthropic-beta`` header
goes in the body as ``anthropic_beta``), signed like every bedrock request
(:meth:`gateway_bedrock.runtime.Runtime.send`). So an Anthropic client's request goes as it
sent it (``cache_control``, thinking, documents, every field), and other protocols
are converted by the anthropic adapter; answers, usage (cache reads and writes) and
errors are read as Anthropic's.

The stream is AWS's event stream whose ``chunk`` events carry, base64 in
``bytes``, one Anthropic stream event's JSON: each becomes that event's SSE frame
(what an Anthropic client is sent as it is), decoded by the anthropic adapter. An
exception message fails the stream as in ConverseStream.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import aiohttp
import orjson

from gateway_core import Exchange, Frame, InvalidRequestError, Target, UpstreamError, endpoints
from gateway_core.errors import excerpt
from gateway_core.upstream import FrameStream, split_frames
from gateway_anthropic.channel import AnthropicChannel, FrameDecoder

from .errors import stream_failure
from .eventstream import EventStreamSplitter, read_message
from .runtime import Runtime, model_url

BEDROCK_VERSION = "bedrock-2023-05-31"


class BedrockClaude(AnthropicChannel):
    """Claude on Bedrock's InvokeModel: the anthropic channel type at Bedrock's URLs."""

    name = "bedrock"

    def __init__(self, runtime: Runtime) -> None:
        super().__init__()
        self.runtime = runtime

    def upstream_request(self, target: Target, endpoint: str, body: dict[str, Any], stream: bool, options: Any) -> tuple[str, dict[str, Any]]:
        if endpoint != endpoints.CHAT:
            raise InvalidRequestError(f"The endpoint '{endpoint}' is not served by a bedrock channel.")
        model = str(body.get("model") or target.upstream_model)
        body = {name: value for name, value in body.items() if name != "model"}
        body["anthropic_version"] = BEDROCK_VERSION
        betas = [beta.strip() for beta in str((options or {}).get("anthropic_beta") or "").split(",") if beta.strip()]
        if betas:
            body["anthropic_beta"] = betas
        return model_url(target.channel, model, "invoke-with-response-stream" if stream else "invoke"), body

    async def auth_headers(self, exchange: Exchange) -> dict[str, str]:
        return {}  # the whole request is signed when sent (post)

    async def post(self, exchange: Exchange, url: str, headers: dict[str, str], body: bytes) -> aiohttp.ClientResponse:
        return await self.runtime.send(exchange, url, body, stream=exchange.call.stream)

    def stream_frames(self, response: aiohttp.ClientResponse) -> FrameStream:
        return split_frames(response, EventStreamSplitter, ChunkDecoder().decode)


class ChunkDecoder:
    """Decodes one stream's event-stream messages: each ``chunk`` as Anthropic's SSE."""

    __slots__ = ("_anthropic",)

    def __init__(self) -> None:
        self._anthropic = FrameDecoder()

    def decode(self, raw: bytes) -> Frame:
        headers, payload = read_message(raw)
        failure = stream_failure(headers, payload)
        if failure is not None:
            raise failure
        if headers.get(":event-type") != "chunk":
            return Frame(b"")
        try:
            event = base64.b64decode(orjson.loads(payload)["bytes"], validate=True)
            name = orjson.loads(event)["type"]
        except (orjson.JSONDecodeError, binascii.Error, KeyError, TypeError, ValueError):
            error = UpstreamError("the upstream sent a stream chunk that is not a base64 Anthropic event")
            error.upstream_body = excerpt(payload)
            raise error from None
        return self._anthropic.decode(b"event: %s\ndata: %s\n\n" % (str(name).encode(), event))
