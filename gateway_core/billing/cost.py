"""What a request costs, in integer micro-USD: the rounding rule, defined once.

Prices are integers: micro-USD per million tokens (input, output, cached input,
cache write) and per million characters, micro-USD per image and per minute of
audio. A group ratio in parts per million multiplies the whole price
(1,000,000 = ×1).

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
written to a cache (``cache_write_tokens``) included. Cached and cache-write
tokens are priced at their own price when one is set, else at the input price.
"""

from __future__ import annotations

import attrs

from ..records import PriceRecord

# One denominator for every kind of unit, so the sum is exact before rounding:
#   tokens and characters: units × micros-per-million × ratio_ppm / 1e12
#   images:                units × micros-each       × ratio_ppm / 1e6
#   audio milliseconds:    ms    × micros-per-minute × ratio_ppm / (60,000 × 1e6)
_SCALE = 60 * 10**12
_PER_MILLION = 60  # tokens, characters
_PER_IMAGE = 60 * 10**6
_PER_AUDIO_MS = 1000
UNIT_RATIO_PPM = 1_000_000


@attrs.frozen
class Metered:
    """What one request used."""

    input_tokens: int = 0  # every input token, cached ones included
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    images: int = 0
    characters: int = 0
    audio_ms: int = 0


def cost_micros(price: PriceRecord, ratio_ppm: int, metered: Metered) -> int:
    """The cost of ``metered`` at ``price`` × ``ratio_ppm``, rounded up to a whole micro-USD."""
    if price.free:
        return 0
    input_price = price.input_micros_per_mtok
    cached_price = input_price if price.cached_input_micros_per_mtok is None else price.cached_input_micros_per_mtok
    write_price = input_price if price.cache_write_micros_per_mtok is None else price.cache_write_micros_per_mtok
    cached = max(0, metered.cached_input_tokens)
    written = max(0, metered.cache_write_tokens)
    uncached = max(0, metered.input_tokens - cached - written)
    per_million = (
        uncached * input_price
        + cached * cached_price
        + written * write_price
        + max(0, metered.output_tokens) * price.output_micros_per_mtok
        + max(0, metered.characters) * (price.per_mchar_micros or 0)
    )
    numerator = (
        per_million * _PER_MILLION
        + max(0, metered.images) * (price.per_image_micros or 0) * _PER_IMAGE
        + max(0, metered.audio_ms) * (price.per_audio_minute_micros or 0) * _PER_AUDIO_MS
    ) * ratio_ppm
    return -(-numerator // _SCALE)  # ceil, exactly, in integers


def max_cost_micros(price: PriceRecord, ratio_ppm: int, *, input_tokens: int, max_output_tokens: int) -> int:
    """The most a chat request can cost: every input token at the dearest input
    price (plain, cached or cache write) and ``max_output_tokens`` of output."""
    if price.free:
        return 0
    dearest = max(
        price.input_micros_per_mtok,
        price.cached_input_micros_per_mtok or 0,
        price.cache_write_micros_per_mtok or 0,
    )
    per_million = max(0, input_tokens) * dearest + max(0, max_output_tokens) * price.output_micros_per_mtok
    return -(-(per_million * _PER_MILLION * ratio_ppm) // _SCALE)
