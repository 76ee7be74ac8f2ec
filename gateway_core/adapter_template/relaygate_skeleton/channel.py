"""The ``skeleton`` channel type: one attempt of one request against its upstream.

It speaks a wire no client speaks, so the gateway always hands it the core request
(``exchange.request``) and renders its answer in the client's own protocol. The
core adds the channel's own headers (``relaygate channel add --header``), applies
the timeouts and turns upstream failures into gateway errors (``post``).
"""

from __future__ import annotations

import orjson

from gateway_core import (
    ChannelType,
    ChatRequest,
    Exchange,
    Frame,
    InvalidRequestError,
    JsonReply,
    ModelQuery,
    Reply,
    Setting,
    StreamReply,
    UpstreamError,
    endpoints,
)
from gateway_core.upstream import ndjson_frames, parse_answer, parse_frame_json, post, read_all
from gateway_core.upstream_models import entries, get_page

from .wire import CHAT_PATH, MODELS_PATH, StreamDecoder, answer_from_wire, error_message, request_to_wire

WIRE = "skeleton"
KEEP_ALIVE = Setting("keep_alive", "str", help="how long the upstream keeps the model loaded (like 10m; not set: its default)")


class SkeletonChannel(ChannelType):
    name = "skeleton"
    settings = (KEEP_ALIVE,)

    def wire(self, endpoint: str) -> str | None:
        return WIRE if endpoint == endpoints.CHAT else None

    async def list_models(self, query: ModelQuery) -> list[str]:
        """The upstream's models (``relaygate channel models NAME --fetch``, the console's
        button): one GET, bounded and timed by the core's ``get_page``."""
        headers = {"Authorization": f"Bearer {query.api_key}"} if query.api_key else {}
        page = await get_page(query, query.channel.base_url + MODELS_PATH, headers=headers, error_message=error_message)
        return [item["name"] for item in entries(page, "models") if isinstance(item, dict) and isinstance(item.get("name"), str)]

    async def send(self, exchange: Exchange) -> Reply:
        request, target = exchange.request, exchange.target
        if not isinstance(request, ChatRequest):
            raise InvalidRequestError("A skeleton channel serves chat requests only.")
        stream = exchange.call.stream
        headers = {"Content-Type": "application/json"}
        if target.api_key:
            headers["Authorization"] = f"Bearer {target.api_key}"
        keep_alive = KEEP_ALIVE.read(target.channel.settings)
        body = orjson.dumps(request_to_wire(request, target.upstream_model, stream, keep_alive))
        response = await post(exchange, target.channel.base_url + CHAT_PATH, headers=headers, body=body, error_message=error_message)
        if stream:
            frames = ndjson_frames(response, LineDecoder().decode)
            return StreamReply(frames=frames, close=frames.aclose)
        answer = answer_from_wire(parse_answer(await read_all(response)))
        return JsonReply(body=None, response=answer, usage=answer.usage)


class LineDecoder:
    """One stream's lines as frames of core events."""

    def __init__(self) -> None:
        self.events = StreamDecoder()

    def decode(self, raw: bytes) -> Frame:
        if not raw.strip():
            return Frame(raw)  # a blank line: nothing happened
        line = parse_frame_json(raw)
        if "error" in line:
            raise UpstreamError(f"the upstream reported an error mid-stream: {line['error']}")
        return Frame(raw, tuple(self.events.feed(line)), terminal=line.get("done") is True)
