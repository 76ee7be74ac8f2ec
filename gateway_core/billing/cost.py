"""What a request costs, in integer micro-USD: the rounding rule, defined once.

Prices are integers: micro-USD per million tokens (input, output, cached input,
cache write, an hour-long cache write, reasoning) and per million characters,
micro-USD per image, per minute of audio and per request. A group ratio in parts
per million multiplies the whole price (1,000,000 = ×1).

**Rounding rule.** Every component is summed *exactly* (integer arithmetic over
one common denominator), the ratio applied, and the total rounded **up** to the
next whole micro-USD, once per request::

    cost = ceil( (Σ units × unit price) × ratio_ppm / scale )

Rounding up (never half-up, never per component) means a request that used
anything priced costs at least 1 micro-USD, the sum of many small requests is
never rounded away, and a reservation computed with the same function is never
below the cost of the usage it covers.

Input tokens follow the core's :class:`gateway_core.model.Usage`: ``input_tokens``
counts every input token, the cached ones (``cached_input_tokens``) and those
written to a cache (``cache_write_tokens``, of which ``cache_write_1h_tokens``
for an hour) included; ``output_tokens`` counts reasoning
(``reasoning_tokens``). Each kind is priced at its own price when one is set:
cached and cache-write tokens else at the input price, an hour-long write else
at the cache-write price, reasoning else at the output price. A price with a
**tier** (``tier_threshold_tokens``) charges a request whose input is above the
threshold the tier's input and output prices (long context).

:func:`cost_breakdown` is the one pricing function: the charge
(:func:`cost_micros`) and the reservation (:func:`max_cost_micros`, the same
function on the worst case the request allows) both use it.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..records import PriceRecord

# One denominator for every kind of unit, so the sum is exact before rounding:
#   tokens and characters: units × micros-per-million × ratio_ppm / 1e12
#   images, requests:      units × micros-each       × ratio_ppm / 1e6
#   audio milliseconds:    ms    × micros-per-minute × ratio_ppm / (60,000 × 1e6)
_SCALE = 60 * 10**12
_PER_MILLION = 60  # tokens, characters
_PER_UNIT = 60 * 10**6
_PER_AUDIO_MS = 1000
UNIT_RATIO_PPM = 1_000_000


@attrs.frozen
class Metered:
    """What one request used."""

    input_tokens: int = 0  # every input token, cached ones included
    output_tokens: int = 0  # reasoning included
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0  # the hour-long ones included
    images: int = 0
    characters: int = 0
    audio_ms: int = 0
    reasoning_tokens: int = 0
    cache_write_1h_tokens: int = 0
    requests: int = 0  # charged the price per request


@attrs.frozen
class Rates:
    """The per-million-token prices that apply to one request (its tier resolved)."""

    input: int
    output: int
    cached: int
    cache_write: int
    cache_write_1h: int
    reasoning: int
    tier: bool


def rates(price: PriceRecord, input_tokens: int) -> Rates:
    """The token prices of ``price`` for a request of ``input_tokens`` input tokens."""
    tier = price.tier_threshold_tokens is not None and input_tokens > price.tier_threshold_tokens
    input_price = price.tier_input_micros_per_mtok or 0 if tier else price.input_micros_per_mtok
    output_price = price.output_micros_per_mtok
    if tier and price.tier_output_micros_per_mtok is not None:
        output_price = price.tier_output_micros_per_mtok
    cached = input_price if price.cached_input_micros_per_mtok is None else price.cached_input_micros_per_mtok
    write = input_price if price.cache_write_micros_per_mtok is None else price.cache_write_micros_per_mtok
    write_1h = write if price.cache_write_1h_micros_per_mtok is None else price.cache_write_1h_micros_per_mtok
    reasoning = output_price if price.reasoning_micros_per_mtok is None else price.reasoning_micros_per_mtok
    return Rates(input_price, output_price, cached, write, write_1h, reasoning, tier)


# the components of a cost, in the order of ``CostBreakdown.numerators``
PARTS = ("input", "cached", "cache_write", "output", "reasoning", "media", "per_request")
_NOTHING = (0,) * len(PARTS)


@attrs.frozen
class CostBreakdown:
    """A request's cost by component and the total charged (``total``, rounded up).

    ``numerators`` are the components (named by :data:`PARTS`) over the common
    denominator, before the ratio; :attr:`parts` and :attr:`exact` give them in
    micro-USD with the ratio applied, before the one rounding."""

    numerators: tuple[int, ...]
    ratio_ppm: int
    tier: bool
    total: int

    @property
    def parts(self) -> dict[str, float]:
        return {name: value * self.ratio_ppm / _SCALE for name, value in zip(PARTS, self.numerators)}

    @property
    def exact(self) -> float:
        return sum(self.numerators) * self.ratio_ppm / _SCALE

    def as_dict(self) -> dict[str, Any]:
        """For the usage row's ``cost_detail``: the non-zero parts, the ratio, the rounding."""
        detail: dict[str, Any] = {name: round(value, 6) for name, value in self.parts.items() if value}
        detail.update(ratio_ppm=self.ratio_ppm, rounding=round(self.total - self.exact, 6), total=self.total)
        if self.tier:
            detail["tier"] = True
        return detail


def no_cost(ratio_ppm: int) -> CostBreakdown:
    """A breakdown of nothing charged, at ``ratio_ppm``."""
    return CostBreakdown(_NOTHING, ratio_ppm, False, 0)


def cost_breakdown(price: PriceRecord, ratio_ppm: int, metered: Metered) -> CostBreakdown:
    """The cost of ``metered`` at ``price`` × ``ratio_ppm``, by component, rounded up once."""
    if price.free:
        return no_cost(ratio_ppm)
    return _priced(rates(price, metered.input_tokens), price, ratio_ppm, metered)


def _priced(r: Rates, price: PriceRecord, ratio_ppm: int, metered: Metered) -> CostBreakdown:
    """The cost of ``metered`` at the token prices ``r`` and ``price``'s prices per unit."""
    cached = max(0, metered.cached_input_tokens)
    written = max(0, metered.cache_write_tokens)
    written_1h = min(written, max(0, metered.cache_write_1h_tokens))
    uncached = max(0, metered.input_tokens - cached - written)
    output = max(0, metered.output_tokens)
    reasoning = min(output, max(0, metered.reasoning_tokens))
    media = 0
    if metered.characters > 0 and price.per_mchar_micros:
        media += metered.characters * price.per_mchar_micros * _PER_MILLION
    if metered.images > 0 and price.per_image_micros:
        media += metered.images * price.per_image_micros * _PER_UNIT
    if metered.audio_ms > 0 and price.per_audio_minute_micros:
        media += metered.audio_ms * price.per_audio_minute_micros * _PER_AUDIO_MS
    numerators = (
        uncached * r.input * _PER_MILLION,
        cached * r.cached * _PER_MILLION,
        ((written - written_1h) * r.cache_write + written_1h * r.cache_write_1h) * _PER_MILLION,
        (output - reasoning) * r.output * _PER_MILLION,
        reasoning * r.reasoning * _PER_MILLION,
        media,
        max(0, metered.requests) * (price.per_request_micros or 0) * _PER_UNIT,
    )
    total = -(-sum(numerators) * ratio_ppm // _SCALE)  # ceil, exactly, in integers
    return CostBreakdown(numerators, ratio_ppm, r.tier, total)


def cost_micros(price: PriceRecord, ratio_ppm: int, metered: Metered) -> int:
    """The cost of ``metered`` at ``price`` × ``ratio_ppm``, rounded up to a whole micro-USD."""
    return cost_breakdown(price, ratio_ppm, metered).total


def max_cost_micros(price: PriceRecord, ratio_ppm: int, *, input_tokens: int, max_output_tokens: int) -> int:
    """The most a chat request can cost: every input token at the dearest input
    price (plain, cached or cache write, of its tier), ``max_output_tokens`` of
    output at the dearer of the output and reasoning prices, and its price per
    request — the same pricing as :func:`cost_breakdown`, on those worst rates."""
    if price.free:
        return 0
    r = rates(price, input_tokens)
    dearest_input = max(r.input, r.cached, r.cache_write, r.cache_write_1h)
    dearest_output = max(r.output, r.reasoning)
    worst = Rates(dearest_input, dearest_output, dearest_input, dearest_input, dearest_input, dearest_output, False)
    metered = Metered(input_tokens=input_tokens, output_tokens=max_output_tokens, requests=1)
    return _priced(worst, price, ratio_ppm, metered).total
