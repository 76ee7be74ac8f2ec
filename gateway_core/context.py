"""The state of one request as it moves along the path."""

from __future__ import annotations

import os
import time
from typing import Any

import attrs

from .client_protocol import Call, ClientProtocol
from .records import KeyRecord, UsageRow
from .tally import estimate_tokens


def new_request_id() -> str:
    return "req_" + os.urandom(12).hex()


@attrs.define
class RequestContext:
    """Created when a request arrives; policies and the relay fill it in.

    ``secret`` is the API key as the client sent it (never logged); ``row`` is the usage-log row the request will leave behind, whatever happens.
    ``state`` lets policies keep what they must undo when the request finishes
    (a concurrency slot, a reservation), keyed by policy name.
    """

    request_id: str
    protocol: ClientProtocol
    client_ip: str | None
    headers: Any
    started: float = attrs.field(factory=time.perf_counter)
    call: Call | None = None
    key: KeyRecord | None = None
    row: UsageRow = attrs.field(default=None)
    secret: str | None = attrs.field(default=None, repr=False)
    body_size: int = 0
    response_headers: list[tuple[bytes, bytes]] = attrs.field(factory=list)
    state: dict[str, Any] = attrs.field(factory=dict)
    # billing: the reservation the quota policy made (a gateway_core.billing.Charge),
    # settled with the usage row; ``settled`` once the request has been recorded
    charge: Any = None
    settled: bool = False

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000.0

    def estimated_input_tokens(self) -> int:
        """A local estimate of the request's input tokens, from its body size."""
        return estimate_tokens(self.body_size)
