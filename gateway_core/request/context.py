"""The state of one request as it moves along the path.

It names the policies and the reservation it holds by the small Protocols below, not by
their modules (which name ``RequestContext``): the policies' interface
(``gateway_core.policy``) and the reservation's owner (``request/reservation.py``) sit
above it, with no import circle between them (``tests/test_architecture.py``)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..client_protocol import Call, ClientProtocol
from ..errors import InternalError
from ..records import KeyRecord, UsageRow
from ..tally import estimate_tokens, text_chars

if TYPE_CHECKING:
    import asyncio

    from ..billing.charge import Charge
    from ..channel_type import Target
    from ..gateway import Gateway
    from ..ratelimit import SlotLimits


class Admitted(Protocol):
    """A policy that admitted the request and must finish it (a :class:`gateway_core.policy.Policy`)."""

    async def finish(self, ctx: RequestContext, gateway: Gateway) -> None: ...


class PendingWrite(Protocol):
    """A reservation whose write is in flight (:class:`gateway_core.request.reservation.PendingHold`)."""

    task: asyncio.Future[int]


def new_request_id() -> str:
    """``req_``, the time in milliseconds (12 hex digits), then 80 random bits (20).

    Ids made later sort after earlier ones (within one millisecond, in any
    order), so the indexes keyed by them — the usage log's, the ledger's, the
    reservations' — take each new id at their right edge: a batch of settlements
    writes one leaf page of each instead of one random page per request, and the
    pages fill up. The random part keeps them unique across workers and replicas."""
    return f"req_{time.time_ns() // 1_000_000:012x}{os.urandom(10).hex()}"


@attrs.define
class RequestContext:
    """Created when a request arrives; the policies and the relay fill it in, and
    its settlement (:func:`gateway_core.request.settlement.settle`) turns it, with the
    request's :class:`~gateway_core.request.outcome.Outcome`, into its usage-log row.

    ``endpoint`` is the endpoint of the route the request came by (its call may
    name another); ``secret`` is the API key as the client sent it (never logged).
    ``admitted`` lists the policies that admitted the request and must finish
    it; ``state`` lets policies keep what they must undo when the request
    finishes (a concurrency slot), keyed by policy name; ``charge`` is the
    reservation the quota policy made, ``pending_hold`` its write while in flight
    (when the quota policy lets it go beside the upstream call). ``target`` is
    where the last upstream attempt went, ``attempts`` every attempt as the usage
    log keeps it. ``row``
    is the usage-log row, set once by the settlement (before the policies
    finish), and ``settled`` says it was. ``refused_by`` names the policy that
    refused the request, if one did.
    """

    request_id: str
    protocol: ClientProtocol
    client_ip: str | None
    headers: Any
    endpoint: str = ""
    started: float = attrs.field(factory=time.perf_counter)
    started_at: float = attrs.field(factory=time.time)
    call: Call | None = None
    key: KeyRecord | None = None
    secret: str | None = attrs.field(default=None, repr=False)
    body_size: int = 0
    response_headers: list[tuple[bytes, bytes]] = attrs.field(factory=list)
    admitted: list[Admitted] = attrs.field(factory=list)
    state: dict[str, Any] = attrs.field(factory=dict)
    charge: Charge | None = None
    slot_limits: SlotLimits | None = None  # rate limits taken with the first channel's slot (the rate_limit policy's)
    pending_hold: PendingWrite | None = None  # its write in flight (gateway_core.request.reservation owns it)
    target: Target | None = None
    attempts: list[dict[str, Any]] = attrs.field(factory=list)
    row: UsageRow | None = None
    settled: bool = False
    refused_by: str | None = None
    trace: Any = None  # the request's spans, when tracing is on (relaygate_tracing's RequestTrace)
    served_model: str | None = None  # the model a model fallback served instead of the one asked for

    def authenticated_key(self) -> KeyRecord:
        """The request's API key, for the policies and steps after authentication."""
        if self.key is None:
            raise InternalError("the request reached a step that needs its API key before authentication")
        return self.key

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000.0

    def estimated_input_tokens(self) -> int:
        """The most input tokens the request can hold, from its body size (for the
        reservation and the rate limits: an over-estimate)."""
        return estimate_tokens(self.body_size)

    def text_input_tokens(self) -> int:
        """A local estimate of the request's input tokens from the text of its body
        (inline images and files are not text): what an answer that reported no
        usage is charged for its input."""
        return estimate_tokens(text_chars(self.call.body)) if self.call is not None else 0
