"""What a request may cost (its reservation) and what a finished request is charged.

Besides tokens, a call may use units priced apiece (:class:`~gateway_core.model.MediaUsage`):
images, characters of speech, milliseconds of audio. They come from two places:

- ``Call.options["media"]`` (:data:`MEDIA_OPTION`): what the request itself says it
  will use (the images it asks for, the characters it speaks, the audio length
  estimated from an upload's size). Reserved before the upstream call, and charged
  when the answer reports nothing better (a speech stream) and was delivered.
- ``ctx.state["billing.media"]`` (:data:`MEDIA_USED`): what the answer reported
  (the images returned, a transcription's duration), set by the relay from
  :attr:`JsonReply.media <gateway_core.channel_type.JsonReply.media>`. It wins.

``Call.options["price_variants"]`` (:data:`PRICE_VARIANTS`) names prices more
specific than the model's, tried first (``"dall-e-3:1024x1792:hd"``, then
``"dall-e-3:1024x1792"``, then ``"dall-e-3"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .. import endpoints
from ..model import MediaUsage
from ..records import PriceRecord, UsageRow
from .cost import Metered, cost_micros, max_cost_micros

MAX_TOKEN_FIELDS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
MEDIA_OPTION = "media"
MEDIA_USED = "billing.media"
PRICE_VARIANTS = "price_variants"
NO_OUTPUT_ENDPOINTS = frozenset({endpoints.EMBEDDINGS, endpoints.AUDIO_SPEECH})


@attrs.define(slots=True)
class Charge:
    """A request's reservation, kept on its context until it is settled."""

    user_id: int
    key_id: int
    price: PriceRecord
    ratio_ppm: int
    held_micros: int


def price_for(prices: Mapping[str, PriceRecord], model: str, options: Mapping[str, Any]) -> PriceRecord | None:
    """The price of a call: its most specific price variant that is set, else its model's."""
    for name in options.get(PRICE_VARIANTS, ()):
        price = prices.get(name)
        if price is not None:
            return price
    return prices.get(model)


def request_cost(row: UsageRow, price: PriceRecord, ratio_ppm: int, media: MediaUsage | None = None) -> int:
    """The cost of a finished request.

    Reported usage is charged as reported. Estimated usage (the upstream reported
    none) is charged for the input and the output actually delivered, except
    that an answer that ended without delivering any output (an upstream error,
    a timeout, a client gone before the first token) costs nothing. A request
    that failed before any answer has no tokens and costs nothing. ``media``
    (see :func:`media_used`) is charged on top, at the per-unit prices.
    """
    if media is None and row.estimated and row.output_tokens == 0 and row.end_reason != "done":
        return 0
    media = media or MediaUsage()
    metered = Metered(
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cached_input_tokens=row.cached_tokens,
        cache_write_tokens=row.cache_write_tokens,
        images=media.images,
        characters=media.characters,
        audio_ms=media.audio_ms,
    )
    return cost_micros(price, ratio_ppm, metered)


def media_used(state: Mapping[str, Any], options: Mapping[str, Any], row: UsageRow) -> MediaUsage | None:
    """The per-unit usage to charge: the answer's report, else what the request
    said it would use when its answer reached the client (``None``: nothing)."""
    reported = state.get(MEDIA_USED)
    if isinstance(reported, MediaUsage):
        return reported
    asked = options.get(MEDIA_OPTION)
    if isinstance(asked, MediaUsage) and row.first_token_ms is not None:
        return asked
    return None


def max_request_cost(
    price: PriceRecord, ratio_ppm: int, *, endpoint: str, options: Mapping[str, Any], body: Mapping[str, Any],
    input_tokens: int, default_max_output: int,
) -> int:
    """The most a request can cost: its input at the dearest input price, its
    output cap (none for embeddings and speech; per image asked for images), and
    the units the request says it will use."""
    media = options.get(MEDIA_OPTION)
    media = media if isinstance(media, MediaUsage) else MediaUsage()
    if endpoint in NO_OUTPUT_ENDPOINTS:
        max_output = 0
    else:
        max_output = requested_max_output(options, body) or default_max_output
        max_output *= max(1, media.images)
    most = max_cost_micros(price, ratio_ppm, input_tokens=input_tokens, max_output_tokens=max_output)
    if media != MediaUsage():
        units = Metered(images=media.images, characters=media.characters, audio_ms=media.audio_ms)
        most += cost_micros(price, ratio_ppm, units)
    return most


def requested_max_output(options: Mapping[str, Any], body: Mapping[str, Any]) -> int | None:
    """The output-token cap the client asked for: a protocol's
    ``options["max_output_tokens"]`` when it sets one, else the body's
    ``max_completion_tokens``, ``max_tokens`` or ``max_output_tokens``."""
    for value in (options.get("max_output_tokens"), *(body.get(name) for name in MAX_TOKEN_FIELDS)):
        if type(value) is int and value > 0:
            return value
    return None
