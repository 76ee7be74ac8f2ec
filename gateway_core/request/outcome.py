"""How a request ended: the value each branch of the relay hands to the settlement
(:func:`gateway_core.request.settlement.settle`), which turns it into the usage-log row."""

from __future__ import annotations

import attrs
import structlog

from ..errors import GatewayError, InternalError, UpstreamTimeoutError
from ..model import MediaUsage, Usage
from ..tally import estimate_tokens, plausible

NO_USAGE = Usage()
log = structlog.get_logger("relaygate.request")


@attrs.frozen
class Outcome:
    """How one request ended, as the branch of the relay that ended it tells it.

    ``status`` is the HTTP status the client got (499: it went away);
    ``end_reason`` how its answer ended (``done``, ``client_gone``,
    ``upstream_error``, ``timeout``, ``shutdown``; ``None`` for a request refused or failed
    before any answer); ``error`` what went wrong, if anything. ``usage`` holds
    the tokens to record: the upstream's report or, when ``estimated``, a local
    estimate (see :func:`answered`); ``None``: none. ``media`` is what the answer
    reported of units priced apiece; ``first_token_ms`` when the first output
    reached the client (``None``: none did).
    """

    status: int
    end_reason: str | None = None
    error: GatewayError | None = None
    usage: Usage | None = None
    estimated: bool = False
    media: MediaUsage | None = None
    first_token_ms: float | None = None


DONE = Outcome(200, "done")
CLIENT_GONE = Outcome(499, "client_gone")
CUT_BY_SHUTDOWN = Outcome(499, "shutdown")  # the server's shutdown ended the request before its answer


def answered(
    reported: Usage | None,
    input_tokens: int,
    output_chars: int,
    *,
    status: int = 200,
    end_reason: str = "done",
    error: GatewayError | None = None,
    media: MediaUsage | None = None,
    first_token_ms: float | None = None,
    input_reported: Usage | None = None,
) -> Outcome:
    """The outcome of a request an upstream was asked to answer: the usage it
    reported, else an estimate (marked so): the input the upstream counted before
    the answer ended (``input_reported``), else ``input_tokens`` (the local
    estimate from the request's text), and the characters of output delivered;
    estimated too when ``media`` is. A report
    with a count that is no count (negative, not an integer, past a billion) is taken as none."""
    if reported is not None and not plausible(reported):
        log.warning("implausible usage from the upstream: estimated instead", usage=repr(reported)[:300])
        reported = None
    if reported is None:
        output = estimate_tokens(output_chars)
        if input_reported is not None:
            usage = attrs.evolve(input_reported, output_tokens=output, reasoning_tokens=0)
        else:
            usage = Usage(input_tokens=input_tokens, output_tokens=output)
        estimated = True
    else:
        usage, estimated = reported, media is not None and media.estimated
    return Outcome(status, end_reason, error, usage, estimated, media, first_token_ms)


def end_reason_of(error: GatewayError) -> str:
    """How an answer an error cut short ended: ``timeout``, ``upstream_error``, or
    ``internal_error`` when the gateway's side broke it (an adapter breaking the stream
    contract, a bug)."""
    if isinstance(error, UpstreamTimeoutError):
        return "timeout"
    return "internal_error" if isinstance(error, InternalError) else "upstream_error"
