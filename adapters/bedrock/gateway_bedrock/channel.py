"""The ``bedrock`` channel type: Amazon Bedrock's Converse API, for every model
family Bedrock serves through it (Claude, Llama, Nova, Mistral …), and Claude
through InvokeModel with Anthropic's own body when the channel asks for it.

A chat call of any client protocol goes through the core model to
``POST {base}/model/{modelId}/converse``, or ``/converse-stream`` for a stream,
whose binary event-stream body is cut and checked as it arrives
(:mod:`gateway_bedrock.eventstream`) and converted event by event. The model id
(a base id, an inference profile or an ARN) is the channel's mapped model,
quoted into one path segment; the request is signed for exactly that path
(:mod:`gateway_bedrock.runtime`).

With the setting ``api=invoke``, Claude models (``anthropic.…`` ids, their
inference profiles and ARNs) go to InvokeModel instead (:mod:`gateway_bedrock.invoke`):
an Anthropic client's request then takes the fast path (its body as sent, every
Anthropic-only field kept), other protocols are converted to Anthropic's body;
other models stay on Converse.

Listing the models (``relaygate channel models NAME --fetch``) asks Bedrock's
control plane (:mod:`gateway_bedrock.listing`).
"""

from __future__ import annotations

import orjson

from gateway_core import ChannelRecord, ChannelType, Exchange, Frame, JsonReply, ModelQuery, Reply, Setting, StreamReply, UpstreamError, endpoints
from gateway_core.model import ChatRequest
from gateway_core.upstream import parse_answer, read_all, split_frames
from gateway_anthropic.channel import MAX_TOKENS, PARAMETER_RULES

from .auth import auth_headers
from .converse_request import request_to_converse
from .converse_response import response_from_converse
from .converse_stream import ConverseEvents
from .eventstream import EventStreamSplitter, read_message
from .invoke import BedrockClaude
from .listing import CONTROL_URL, control_url, list_models
from .model_ids import is_claude
from .runtime import REGION, Runtime, model_url, region_of

CONVERSE_WIRE = "bedrock-converse"
API = Setting(
    "api", "choice", default="converse", choices=("converse", "invoke"),
    help="converse: every model through Converse; invoke: Claude (anthropic.* ids) through InvokeModel with "
    "Anthropic's body (an Anthropic client's fields kept as sent), other models through Converse",
)  # fmt: skip


def uses_invoke(channel: ChannelRecord, upstream_model: str) -> bool:
    """Whether a call of ``upstream_model`` on ``channel`` goes to InvokeModel."""
    return API.read(channel.settings) == "invoke" and is_claude(upstream_model)


class BedrockChannel(ChannelType):
    name = "bedrock"
    settings = (REGION, API, CONTROL_URL, MAX_TOKENS, PARAMETER_RULES)

    def __init__(self) -> None:
        self.runtime = Runtime()
        self.claude = BedrockClaude(self.runtime)

    def wire(self, endpoint: str) -> str | None:
        return CONVERSE_WIRE if endpoint == endpoints.CHAT else None

    def model_wire(self, endpoint: str, channel: ChannelRecord, upstream_model: str) -> str | None:
        """Anthropic's Messages wire for Claude on an ``api=invoke`` channel (an
        Anthropic client's body goes as sent), else Converse's (every client converted)."""
        if endpoint == endpoints.CHAT and uses_invoke(channel, upstream_model):
            return self.claude.wire(endpoint)
        return self.wire(endpoint)

    async def send(self, exchange: Exchange) -> Reply:
        call, target = exchange.call, exchange.target
        if uses_invoke(target.channel, target.upstream_model):
            return await self.claude.send(exchange)
        request = exchange.request
        if not isinstance(request, ChatRequest):
            raise UpstreamError("a bedrock channel was handed a request it cannot read")
        upstream = target.upstream_model
        url = model_url(target.channel, upstream, "converse-stream" if call.stream else "converse")
        response = await self.runtime.send(exchange, url, orjson.dumps(request_to_converse(request, upstream)), stream=call.stream)
        response_id = response.headers.get("x-amzn-RequestId") or exchange.request_id
        if call.stream:
            frames = split_frames(response, EventStreamSplitter, FrameDecoder(ConverseEvents(response_id, upstream)).decode)
            return StreamReply(frames=frames, close=frames.aclose)
        data = await read_all(response)
        converted = response_from_converse(parse_answer(data), response_id=response_id, model=upstream, raw=data)
        return JsonReply(body=None, response=converted, usage=converted.usage)

    async def list_models(self, query: ModelQuery) -> list[str]:
        """The text models and cross-region profiles the control plane lists (:mod:`.listing`)."""
        region = region_of(query.channel)
        key = await self.runtime.resolved_key(query.channel.id, query.api_key, query.timeouts)

        def sign(url: str) -> dict[str, str]:
            return auth_headers(key, method="GET", url=url, region=region, content_type=None, body=b"")

        return await list_models(query, control_url(query.channel).replace("{region}", region), sign)


class FrameDecoder:
    """Decodes one stream's event-stream messages into core events."""

    __slots__ = ("_events",)

    def __init__(self, events: ConverseEvents) -> None:
        self._events = events

    def decode(self, raw: bytes) -> Frame:
        headers, payload = read_message(raw)
        return Frame(raw, tuple(self._events.feed(headers, payload)))
