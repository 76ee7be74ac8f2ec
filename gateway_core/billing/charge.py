"""What a finished request is charged, from its usage-log row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..records import PriceRecord, UsageRow
from .cost import Metered, cost_micros

MAX_TOKEN_FIELDS = ("max_completion_tokens", "max_tokens", "max_output_tokens")


@attrs.define(slots=True)
class Charge:
    """A request's reservation, kept on its context until it is settled."""

    user_id: int
    key_id: int
    price: PriceRecord
    ratio_ppm: int
    held_micros: int


def request_cost(row: UsageRow, price: PriceRecord, ratio_ppm: int) -> int:
    """The cost of a finished request.

    Reported usage is charged as reported. Estimated usage (the upstream reported
    none) is charged for the input and the output actually delivered, except
    that an answer that ended without delivering any output (an upstream error,
    a timeout, a client gone before the first token) costs nothing. A request
    that failed before any answer has no tokens and costs nothing.
    """
    if row.estimated and row.output_tokens == 0 and row.end_reason != "done":
        return 0
    metered = Metered(
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cached_input_tokens=row.cached_tokens,
        cache_write_tokens=row.cache_write_tokens,
    )
    return cost_micros(price, ratio_ppm, metered)


def requested_max_output(options: Mapping[str, Any], body: Mapping[str, Any]) -> int | None:
    """The output-token cap the client asked for: a protocol's
    ``options["max_output_tokens"]`` when it sets one, else the body's
    ``max_completion_tokens``, ``max_tokens`` or ``max_output_tokens``."""
    for value in (options.get("max_output_tokens"), *(body.get(name) for name in MAX_TOKEN_FIELDS)):
        if type(value) is int and value > 0:
            return value
    return None
