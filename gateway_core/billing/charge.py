"""What a request may cost (its reservation) and what a finished request is charged.

What billing knows of a call before it is sent comes from the call's
:class:`~gateway_core.client_protocol.BillingHints`, set by its protocol's
``parse``: the output-token cap, the units priced apiece it will use, and the
price variants to try first. Besides tokens, a call may use units priced apiece
(:class:`~gateway_core.model.MediaUsage`): images, characters of speech,
milliseconds of audio. They come from two places:

- ``BillingHints.media``: what the request itself says it will use (the images
  it asks for, the characters it speaks, the audio length estimated from an
  upload's size). Reserved before the upstream call, and charged when the answer
  reports nothing better (a speech stream) and was delivered.
- ``Outcome.media``: what the answer reported (the images returned, a
  transcription's duration), from
  :attr:`JsonReply.media <gateway_core.channel_type.JsonReply.media>`. It wins.

``BillingHints.price_variants`` names prices more specific than the model's,
tried first (``"dall-e-3:1024x1792:hd"``, then ``"dall-e-3:1024x1792"``, then
``"dall-e-3"``).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from .. import endpoints
from ..client_protocol import NO_HINTS, BillingHints
from ..model import MediaUsage
from ..request.outcome import NO_USAGE, Outcome
from ..records import PriceRecord
from .cost import CostBreakdown, Metered, cost_breakdown, cost_micros, max_cost_micros, no_cost

NO_MEDIA = MediaUsage()
NO_OUTPUT_ENDPOINTS = frozenset({endpoints.EMBEDDINGS, endpoints.AUDIO_SPEECH, endpoints.MODERATIONS, endpoints.RERANK})


@attrs.define(slots=True)
class Charge:
    """A request's reservation, kept on its context until it is settled; ``hints``
    are its call's, for pricing what it used."""

    user_id: int
    key_id: int
    price: PriceRecord
    ratio_ppm: int
    held_micros: int
    hints: BillingHints = NO_HINTS

    def cost(self, outcome: Outcome) -> int:
        """What the finished request is charged (see :func:`request_cost`)."""
        return self.priced(outcome).total

    def priced(self, outcome: Outcome) -> CostBreakdown:
        """What the finished request is charged, by component (see :func:`request_cost`)."""
        return request_breakdown(outcome, self.price, self.ratio_ppm, media_used(outcome, self.hints))


def price_for(prices: Mapping[str, PriceRecord], model: str, hints: BillingHints) -> PriceRecord | None:
    """The price of a call: its most specific price variant that is set, else its model's."""
    for name in hints.price_variants:
        price = prices.get(name)
        if price is not None:
            return price
    return prices.get(model)


def request_cost(outcome: Outcome, price: PriceRecord, ratio_ppm: int, media: MediaUsage | None = None) -> int:
    """The cost of a finished request (see :func:`request_breakdown`)."""
    return request_breakdown(outcome, price, ratio_ppm, media).total


def request_breakdown(outcome: Outcome, price: PriceRecord, ratio_ppm: int, media: MediaUsage | None = None) -> CostBreakdown:
    """The cost of a finished request, by component.

    Reported usage is charged as reported. Estimated usage (the upstream reported
    none) is charged for the input and the output actually delivered, except
    that an answer that ended without delivering any output (an upstream error,
    a timeout, a client gone before the first token) costs nothing. A request
    that failed before any answer has no tokens and costs nothing. ``media``
    (see :func:`media_used`) is charged on top, at the per-unit prices, and the
    price per request once an answer was produced.
    """
    usage = outcome.usage or NO_USAGE
    if media is None and outcome.estimated and usage.output_tokens == 0 and outcome.end_reason != "done":
        return no_cost(ratio_ppm)
    media = media or NO_MEDIA
    answered = outcome.end_reason is not None and (outcome.end_reason == "done" or usage != NO_USAGE or media != NO_MEDIA)
    metered = Metered(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        images=media.images,
        characters=media.characters,
        audio_ms=media.audio_ms,
        reasoning_tokens=usage.reasoning_tokens,
        cache_write_1h_tokens=usage.cache_write_1h_tokens,
        requests=1 if answered else 0,
    )
    return cost_breakdown(price, ratio_ppm, metered)


def media_used(outcome: Outcome, hints: BillingHints) -> MediaUsage | None:
    """The per-unit usage to charge: the answer's report, else what the request
    said it would use when its answer reached the client (``None``: nothing)."""
    if outcome.media is not None:
        return outcome.media
    if hints.media is not None and outcome.first_token_ms is not None:
        return hints.media
    return None


def max_request_cost(
    price: PriceRecord, ratio_ppm: int, *, endpoint: str, hints: BillingHints, input_tokens: int, default_max_output: int,
) -> int:
    """The most a request can cost: its input at the dearest input price, its
    output cap (none for embeddings, speech, moderations and rerank; per image asked for images), and
    the units the request says it will use."""
    media = hints.media or NO_MEDIA
    if endpoint in NO_OUTPUT_ENDPOINTS:
        max_output = 0
    else:
        cap = default_max_output if hints.max_output_tokens is None else hints.max_output_tokens
        max_output = cap * max(1, media.images)  # an image request's cap is per image
    most = max_cost_micros(price, ratio_ppm, input_tokens=input_tokens, max_output_tokens=max_output)
    if media != NO_MEDIA:
        units = Metered(images=media.images, characters=media.characters, audio_ms=media.audio_ms)
        most += cost_micros(price, ratio_ppm, units)
    return most
