"""Relaying one stream to the client: every frame as it comes, checked against
the stream contract and tallied, the frames of one upstream read in one ASGI
send; and the outcome of a stream that ended, from what it delivered."""

from __future__ import annotations

import structlog

from ..client_protocol import StreamWriter
from ..channel_type import StreamReply
from .context import RequestContext
from ..errors import GatewayError, InternalError, UpstreamError
from .outcome import Outcome, answered
from .stream_contract import StreamContract
from ..tally import StreamTally, input_estimate
from ..upstream import read_by_read

log = structlog.get_logger("relaygate.request")

CLIENT_ENDED = frozenset(("client_gone", "write_timeout"))  # the client left, or stopped reading


def streamed_outcome(ctx: RequestContext, tally: StreamTally, end_reason: str, error: GatewayError | None) -> Outcome:
    """The outcome of a stream that ended for ``end_reason``: what it delivered."""
    status = 499 if end_reason in CLIENT_ENDED else 200
    return answered(
        tally.usage, input_estimate(tally.usage, ctx.text_input_tokens), tally.output_chars, status=status, end_reason=end_reason,
        error=error, first_token_ms=tally.first_token_ms(), input_reported=tally.input_usage,
    )


async def pump(reply: StreamReply, contract: StreamContract, writer: StreamWriter, tally: StreamTally, send) -> GatewayError | None:
    """Forward every frame as it comes, checked against the stream contract, the
    frames of one upstream read in one send; return the error that broke the
    stream, if any."""
    next_read = read_by_read(reply.frames)
    check, observe, write = contract.check, tally.observe, writer.write
    out: list[bytes] = []
    try:
        while True:
            try:
                read = await next_read()
            except StopAsyncIteration:
                break
            if len(read) == 1:  # the usual read: one frame
                frame = read[0]
                check(frame)
                observe(frame.events)
                body = write(frame)
            else:
                for frame in read:
                    check(frame)
                    observe(frame.events)
                    data = write(frame)
                    if data:
                        out.append(data)
                body = b"".join(out)
                out.clear()
            if body:
                await send({"type": "http.response.body", "body": body, "more_body": True})
    except GatewayError as error:
        if out:  # what the frames before the failing one wrote
            await send({"type": "http.response.body", "body": b"".join(out), "more_body": True})
        return error
    except Exception:  # a bug in a translation must still end the stream properly
        log.exception("stream failed")
        return InternalError("The gateway failed while streaming the answer.")
    if not tally.finished:
        return UpstreamError("the upstream ended the stream before it finished")
    return None
