"""The ``demo`` channel type: answers locally and deterministically, streaming too.

It lets a new user see the gateway work with no provider account and no network.
Its channel setting ``delay_ms`` (a whole number of milliseconds, default 30)
spaces the streamed words. It lists ``demo-chat`` as its model (it answers any).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncGenerator, Sequence

from gateway_core import (
    ChannelType,
    ChatRequest,
    ChatResponse,
    Exchange,
    Frame,
    InvalidRequestError,
    JsonReply,
    ModelQuery,
    PartDelta,
    PartStart,
    PartStop,
    Reply,
    Setting,
    StopReason,
    StreamFinish,
    StreamReply,
    StreamStart,
    TextPart,
    Usage,
    UsageReport,
    endpoints,
)

from .answer import answer, usage_for

DEMO_WIRE = "demo"
MODELS = ("demo-chat",)  # what it offers; it answers any model it is given
DELAY_MS = Setting("delay_ms", "int", default=30, min=0, max=60_000, help="milliseconds between streamed words")


class DemoChannel(ChannelType):
    name = "demo"
    settings = (DELAY_MS,)
    needs_key = False  # answers by itself

    def wire(self, endpoint: str) -> str | None:
        return DEMO_WIRE if endpoint == endpoints.CHAT else None

    def normalize_base_url(self, base_url: str) -> str:
        scheme, separator, rest = base_url.partition("://")
        if not separator:
            return base_url.rstrip("/") or "local://demo"
        return f"{scheme}://{rest.rstrip('/') or 'demo'}"  # local:// is local://demo, never "local:"

    async def list_models(self, query: ModelQuery) -> list[str]:
        return list(MODELS)

    async def send(self, exchange: Exchange) -> Reply:
        request = exchange.request
        if not isinstance(request, ChatRequest):
            raise InvalidRequestError("A demo channel answers chat requests only.")
        pieces, stop = answer(request)
        text = "".join(pieces)
        usage = usage_for(request, text)
        answer_id = "demo-" + os.urandom(8).hex()
        model = exchange.target.upstream_model
        if not exchange.call.stream:
            response = ChatResponse(
                id=answer_id, model=model, parts=(TextPart(text),), stop_reason=stop, usage=usage, created=int(time.time())
            )
            return JsonReply(body=None, response=response, usage=usage)
        delay = DELAY_MS.read(exchange.target.channel.settings) / 1000.0
        frames = _stream(answer_id, model, pieces, stop, usage, delay)
        return StreamReply(frames=frames, close=frames.aclose)


async def _stream(
    answer_id: str, model: str, pieces: Sequence[str], stop: StopReason, usage: Usage, delay: float
) -> AsyncGenerator[Frame, None]:
    yield Frame(b"", (StreamStart(id=answer_id, model=model, created=int(time.time())), PartStart(0, TextPart(""))))
    for piece in pieces:
        if delay:
            await asyncio.sleep(delay)
        yield Frame(b"", (PartDelta(0, piece),))
    yield Frame(b"", (PartStop(0), StreamFinish(stop), UsageReport(usage)))
