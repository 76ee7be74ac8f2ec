"""The ``fake`` channel type: a real :class:`ChannelType` of the ``fake`` wire.

It calls a :class:`~gateway_core.testing.FakeChat` (or anything speaking
:mod:`.fake_wire`) at the channel's base URL through the core's upstream helpers,
so the core's tests exercise routing, failover, timeouts, billing, limits and
streaming with no provider adapter installed. A client of the kit's ``fake``
protocol speaks the same wire: its body goes through unconverted (the fast path),
unless the channel's setting ``convert`` is true (then the channel claims another
wire, and the relay converts through the core model, as for a client of another
protocol).
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

from .. import endpoints
from ..channel_settings import Setting
from ..channel_type import ChannelType, Exchange, JsonReply, ModelQuery, Reply, StreamReply
from ..client_protocol import Frame
from ..errors import InvalidRequestError
from ..model import ChatRequest
from ..records import ChannelRecord
from ..upstream import parse_answer, post, read_all, sse_frames
from ..upstream_models import entries, get_page
from .fake_wire import WIRE, StreamDecoder, answer_to_core, error_message, request_to_wire, usage_from_wire


CONVERT = Setting("convert", "bool", default=False, help="take the conversion path even for a client of the fake wire")


class FakeChannel(ChannelType):
    name = "fake"
    settings = (CONVERT,)

    def wire(self, endpoint: str) -> str | None:
        return WIRE if endpoint == endpoints.CHAT else None

    def model_wire(self, endpoint: str, channel: ChannelRecord, upstream_model: str) -> str | None:
        wire = self.wire(endpoint)
        return wire + ".converted" if wire is not None and CONVERT.read(channel.settings) else wire

    async def list_models(self, query: ModelQuery) -> list[str]:
        headers = {"Authorization": f"Bearer {query.api_key}"} if query.api_key else {}
        page = await get_page(query, query.channel.base_url + "/models", headers=headers, error_message=error_message)
        return [name for name in entries(page, "models") if isinstance(name, str)]

    async def send(self, exchange: Exchange) -> Reply:
        target, call = exchange.target, exchange.call
        if exchange.request is None:  # the client speaks this wire: its body, the model mapped
            body = {**call.body, "model": target.upstream_model, "stream": call.stream}
        elif isinstance(exchange.request, ChatRequest):
            body = request_to_wire(exchange.request, target.upstream_model, call.stream)
        else:
            raise InvalidRequestError("A fake channel answers chat requests only.")
        headers = {"Content-Type": "application/json"}
        if target.api_key:
            headers["Authorization"] = f"Bearer {target.api_key}"
        url = target.channel.base_url + "/chat"
        response = await post(exchange, url, headers=headers, body=orjson.dumps(body), error_message=error_message)
        if call.stream:
            frames = sse_frames(response, frame_decoder())
            return StreamReply(frames=frames, close=frames.aclose)
        data = await read_all(response)
        answer = parse_answer(data)
        if exchange.passthrough:
            return JsonReply(body=data, response=None, usage=usage_from_wire(answer.get("usage")), model=answer.get("model"))
        converted = answer_to_core(answer)
        return JsonReply(body=None, response=converted, usage=converted.usage)


def frame_decoder() -> Callable[[bytes], Frame]:
    """What turns one stream's SSE frames into :class:`Frame` objects carrying core events."""
    events = StreamDecoder()

    def decode(raw: bytes) -> Frame:
        found, terminal = events.feed(raw)
        return Frame(raw, found, terminal=terminal)

    return decode
