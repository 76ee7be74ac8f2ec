"""An ``openai`` channel's legacy completions and moderations (always the fast path:
the body as the client sent it, the model mapped; see :mod:`.completions` and
:mod:`.moderations`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from gateway_core import Exchange, JsonReply, Reply, StreamReply, endpoints
from gateway_core.upstream import parse_answer, post, read_all, sse_frames

from .chat_response import usage_from_wire
from .chat_stream import FrameDecoder
from .completions import answer_texts, as_chat_chunk
from .error_body import upstream_error_message
from .moderations import moderation_usage

PATHS = {
    endpoints.COMPLETIONS: "/v1/completions",
    endpoints.MODERATIONS: "/v1/moderations",
}


async def send_text(exchange: Exchange, headers: dict[str, str], body: dict[str, Any], url_for: Callable[[str], str]) -> Reply:
    """Send a completions or moderations call's ``body`` (the client's, the model
    mapped; a stream asking for usage, which the client's writer drops again unless
    it asked too) to ``url_for(path)``."""
    call = exchange.call
    url = url_for(PATHS[call.endpoint])
    response = await post(exchange, url, headers=headers, body=orjson.dumps(body), error_message=upstream_error_message)
    if call.stream:
        frames = sse_frames(response, FrameDecoder(as_chat_chunk).decode)
        return StreamReply(frames=frames, close=frames.aclose)
    data = await read_all(response)
    answer = parse_answer(data)
    if call.endpoint == endpoints.MODERATIONS:
        usage, estimated = moderation_usage(answer, call.body)
        return JsonReply(body=data, response=None, usage=usage, model=answer.get("model"), media=estimated)
    usage = usage_from_wire(answer.get("usage"))
    # no usage reported: the texts returned are counted (not the JSON around them)
    return JsonReply(body=data, response=answer_texts(answer) if usage is None else None, usage=usage, model=answer.get("model"))
