"""The ``bedrock`` channel type: Amazon Bedrock's Converse API, for every model
family Bedrock serves through it (Claude, Llama, Nova, Mistral …).

A chat call of any client protocol goes through the core model to
``POST {base}/model/{modelId}/converse``, or ``/converse-stream`` for a stream,
whose binary event-stream body is cut and checked as it arrives
(:mod:`gateway_bedrock.eventstream`) and converted event by event. The model id
(a base id, an inference profile or an ARN) is the channel's mapped model,
quoted into one path segment; the request is signed for exactly that path.

Endpoint: the channel's base URL, in which ``{region}`` is replaced by the
region (``https://bedrock-runtime.{region}.amazonaws.com``, or a fixed one such
as ``https://bedrock-runtime.eu-west-1.amazonaws.com`` or a loopback fake).
Region: the ``region`` setting, else the one a standard endpoint's host names,
else ``us-east-1``. Auth: see :mod:`gateway_bedrock.auth`. Errors: see
:mod:`gateway_bedrock.errors`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import orjson
from yarl import URL

from gateway_core import ChannelType, Exchange, Frame, JsonReply, Reply, Setting, StreamReply, UpstreamError, endpoints
from gateway_core.errors import GatewayError
from gateway_core.model import ChatRequest
from gateway_core.records import ChannelRecord
from gateway_core.upstream import parse_answer, post, read_all, split_frames

from .auth import auth_headers
from .converse_request import request_to_converse
from .converse_response import response_from_converse
from .converse_stream import ConverseEvents
from .errors import upstream_error_message, with_advice
from .eventstream import EventStreamSplitter, read_message
from .model_ids import model_path

CONVERSE_WIRE = "bedrock-converse"
DEFAULT_REGION = "us-east-1"
EVENT_STREAM = "application/vnd.amazon.eventstream"
REGION = Setting(
    "region", "str", default=None,
    help="the AWS region requests are signed for and {region} in the base URL stands for "
    "(default: the region of a bedrock-runtime.REGION.amazonaws.com base URL, else us-east-1)",
)  # fmt: skip


def region_of(channel: ChannelRecord) -> str:
    """The channel's region: its setting, else its endpoint's, else the default."""
    region = REGION.read(channel.settings)
    if isinstance(region, str) and region.strip():
        return region.strip()
    host = urlsplit(channel.base_url).hostname or ""
    labels = host.split(".")
    if len(labels) >= 4 and labels[0].startswith("bedrock-runtime") and labels[-2:] == ["amazonaws", "com"] and labels[1] != "{region}":
        return labels[1]
    return DEFAULT_REGION


class BedrockChannel(ChannelType):
    name = "bedrock"
    settings = (REGION,)

    def wire(self, endpoint: str) -> str | None:
        return CONVERSE_WIRE if endpoint == endpoints.CHAT else None

    async def send(self, exchange: Exchange) -> Reply:
        call, target = exchange.call, exchange.target
        request = exchange.request
        if not isinstance(request, ChatRequest):
            raise UpstreamError("a bedrock channel was handed a request it cannot read")
        channel, upstream = target.channel, target.upstream_model
        region = region_of(channel)
        action = "converse-stream" if call.stream else "converse"
        url = f"{channel.base_url.replace('{region}', region)}/model/{model_path(upstream)}/{action}"
        body = orjson.dumps(request_to_converse(request, upstream))
        headers = {"Content-Type": "application/json", "Accept": EVENT_STREAM if call.stream else "application/json"}
        headers.update(auth_headers(target.api_key, method="POST", url=url, region=region, content_type=headers["Content-Type"], body=body))
        try:
            response = await post(exchange, URL(url, encoded=True), headers=headers, body=body, error_message=upstream_error_message)
        except GatewayError as error:
            raise with_advice(error) from None
        response_id = response.headers.get("x-amzn-RequestId") or exchange.request_id
        if call.stream:
            frames = split_frames(response, EventStreamSplitter, FrameDecoder(ConverseEvents(response_id, upstream)).decode)
            return StreamReply(frames=frames, close=frames.aclose)
        data = await read_all(response)
        converted = response_from_converse(parse_answer(data), response_id=response_id, model=upstream, raw=data)
        return JsonReply(body=None, response=converted, usage=converted.usage)


class FrameDecoder:
    """Decodes one stream's event-stream messages into core events."""

    __slots__ = ("_events",)

    def __init__(self, events: ConverseEvents) -> None:
        self._events = events

    def decode(self, raw: bytes) -> Frame:
        headers, payload = read_message(raw)
        return Frame(raw, tuple(self._events.feed(headers, payload)))
