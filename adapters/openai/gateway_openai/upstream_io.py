"""Reading an OpenAI upstream's raw byte streams (audio)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

from gateway_core import Frame, UpstreamError, UpstreamTimeoutError
from gateway_core.model import PartDelta, PartStart, PartStop, StopReason, StreamFinish, StreamStart, TextPart, Usage, UsageReport


async def byte_frames(response: aiohttp.ClientResponse) -> AsyncIterator[Frame]:
    """A binary answer (audio) as frames of the bytes as they arrive.

    The frames carry core events for the tally (an empty delta per chunk: content
    reached the client, no text to count) and end with a finish and an empty usage
    report, so the request is charged by its own units, not by estimated tokens.
    """
    finished = False
    first = True
    try:
        async for chunk in response.content.iter_any():
            events = (StreamStart("", ""), PartStart(0, TextPart(""))) if first else ()
            first = False
            yield Frame(chunk, (*events, PartDelta(0, "")))
        tail = (StreamStart("", ""),) if first else (PartStop(0),)
        yield Frame(b"", (*tail, StreamFinish(StopReason.END_TURN), UsageReport(Usage())), terminal=True)
        finished = True
    except (TimeoutError, aiohttp.ServerTimeoutError):
        raise UpstreamTimeoutError("the upstream went silent in the middle of the stream") from None
    except (aiohttp.ClientError, ConnectionError) as exc:
        raise UpstreamError(f"the upstream connection dropped in the middle of the stream ({type(exc).__name__})") from None
    finally:
        if finished:
            response.release()
        else:
            response.close()
