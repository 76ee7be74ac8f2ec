"""The cost of a request in integer micro-USD: prices, group ratio, cached tokens,
non-token units, and the one rounding rule (sum exactly, round up once)."""

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_core.billing.charge import max_request_cost, request_cost
from gateway_core.billing.cost import Metered, cost_breakdown, cost_micros, max_cost_micros, rates
from gateway_core.client_protocol import NO_HINTS, capped_output
from gateway_core.model import Usage
from gateway_core.request.outcome import Outcome
from gateway_core.records import PriceRecord

UNIT = 1_000_000  # ratio ×1 in parts per million
PRICE = PriceRecord("m", input_micros_per_mtok=2_500_000, output_micros_per_mtok=10_000_000)  # 2.50 / 10.00 USD per Mtok


def test_known_usage_costs_exactly():
    assert cost_micros(PRICE, UNIT, Metered(input_tokens=1000, output_tokens=500)) == 7_500  # 0.0025 + 0.005 USD
    assert cost_micros(PRICE, UNIT, Metered(input_tokens=1_000_000)) == 2_500_000
    assert cost_micros(PRICE, UNIT, Metered()) == 0


def test_group_ratio_multiplies_the_whole_price():
    usage = Metered(input_tokens=1000, output_tokens=500)
    assert cost_micros(PRICE, 1_500_000, usage) == 11_250
    assert cost_micros(PRICE, 800_000, usage) == 6_000
    assert cost_micros(PRICE, 0, usage) == 0


def test_cached_and_cache_write_tokens_have_their_own_prices():
    price = PriceRecord("m", 2_500_000, 10_000_000, cached_input_micros_per_mtok=1_250_000, cache_write_micros_per_mtok=3_125_000)
    # 1000 input of which 600 read from the cache: 400 × 2.50 + 600 × 1.25 + 500 × 10.00 per Mtok
    assert cost_micros(price, UNIT, Metered(input_tokens=1000, cached_input_tokens=600, output_tokens=500)) == 6_750
    # 500 plain, 200 cached, 300 written: 1250 + 250 + 937.5 = 2437.5 → rounded up once
    assert cost_micros(price, UNIT, Metered(input_tokens=1000, cached_input_tokens=200, cache_write_tokens=300)) == 2_438


def test_cached_tokens_without_their_own_price_cost_the_input_price():
    usage = Metered(input_tokens=1000, cached_input_tokens=600, cache_write_tokens=100, output_tokens=0)
    assert cost_micros(PRICE, UNIT, usage) == cost_micros(PRICE, UNIT, Metered(input_tokens=1000)) == 2_500


def test_rounding_is_up_once_per_request_on_the_exact_sum():
    tiny = PriceRecord("m", input_micros_per_mtok=1, output_micros_per_mtok=1)  # 0.000001 USD per Mtok
    assert cost_micros(tiny, UNIT, Metered(input_tokens=1)) == 1  # 1e-12 USD still costs 1 micro-USD
    cents = PriceRecord("m", input_micros_per_mtok=400_000, output_micros_per_mtok=400_000)
    # 0.4 + 0.4 micro-USD: summed first (0.8), then rounded up to 1 — not 1 + 1
    assert cost_micros(cents, UNIT, Metered(input_tokens=1, output_tokens=1)) == 1
    assert cost_micros(cents, UNIT, Metered(input_tokens=5, output_tokens=0)) == 2  # exactly 2.0: no rounding
    assert cost_micros(cents, UNIT, Metered(input_tokens=5, output_tokens=1)) == 3  # 2.4 → 3
    assert cost_micros(cents, 1_000_001, Metered(input_tokens=5)) == 3  # 2.000002 → 3


def test_free_costs_nothing_whatever_the_prices():
    free = PriceRecord("m", 2_500_000, 10_000_000, free=True)
    assert cost_micros(free, UNIT, Metered(input_tokens=10**9, output_tokens=10**9)) == 0
    assert max_cost_micros(free, UNIT, input_tokens=10**6, max_output_tokens=10**6) == 0


def test_per_unit_prices_images_characters_audio():
    price = PriceRecord("m", 0, 0, per_image_micros=40_000, per_mchar_micros=15_000_000, per_audio_minute_micros=6_000)
    assert cost_micros(price, UNIT, Metered(images=3)) == 120_000
    assert cost_micros(price, 1_500_000, Metered(images=3)) == 180_000
    assert cost_micros(price, UNIT, Metered(characters=1500)) == 22_500  # 1500 × 15 USD per million
    assert cost_micros(price, UNIT, Metered(audio_ms=90_000)) == 9_000  # 1.5 min × 0.006 USD
    assert cost_micros(price, UNIT, Metered(audio_ms=1)) == 1  # 0.1 micro-USD → 1
    # one sum, one rounding, across kinds of unit
    assert cost_micros(price, UNIT, Metered(images=1, characters=1, audio_ms=1)) == 40_016  # 40,000 + 15 + 0.1 → up once


def test_the_maximum_cost_uses_the_dearest_input_price_and_covers_any_usage_within_it():
    price = PriceRecord("m", 2_500_000, 10_000_000, cached_input_micros_per_mtok=1_250_000, cache_write_micros_per_mtok=3_125_000)
    most = max_cost_micros(price, 1_300_000, input_tokens=1000, max_output_tokens=200)
    assert most == -(-(1000 * 3_125_000 + 200 * 10_000_000) * 1_300_000 // 10**12)
    for cached, written, output in ((0, 0, 200), (1000, 0, 200), (0, 1000, 200), (300, 700, 200), (0, 0, 0)):
        usage = Metered(input_tokens=1000, cached_input_tokens=cached, cache_write_tokens=written, output_tokens=output)
        assert cost_micros(price, 1_300_000, usage) <= most



_MICROS = st.integers(0, 50_000_000)
_SOME_MICROS = st.none() | _MICROS
_TOKENS = st.integers(0, 3_000_000)


@st.composite
def _prices(draw):
    return PriceRecord(
        "m", draw(_MICROS), draw(_MICROS), cached_input_micros_per_mtok=draw(_SOME_MICROS),
        cache_write_micros_per_mtok=draw(_SOME_MICROS), cache_write_1h_micros_per_mtok=draw(_SOME_MICROS),
        reasoning_micros_per_mtok=draw(_SOME_MICROS), per_request_micros=draw(_SOME_MICROS),
        per_image_micros=draw(_SOME_MICROS), per_mchar_micros=draw(_SOME_MICROS),
        tier_threshold_tokens=draw(st.none() | _TOKENS), tier_input_micros_per_mtok=draw(_SOME_MICROS),
        tier_output_micros_per_mtok=draw(_SOME_MICROS),
    )  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(_prices(), st.integers(1, 5_000_000), _TOKENS, _TOKENS, st.lists(_TOKENS, min_size=4, max_size=4))
def test_the_maximum_cost_is_the_cost_of_the_worst_case_and_covers_every_usage_within_it(price, ratio, input_tokens, output_cap, split):
    """The definition the reservation keeps: the cost, by the one pricing function, of
    every input token at the dearest input price of its tier and the output cap at the
    dearer of the output and reasoning prices, with the price per request."""
    r = rates(price, input_tokens)  # the prices of this request's tier
    worst = attrs.evolve(
        price, input_micros_per_mtok=max(r.input, r.cached, r.cache_write, r.cache_write_1h), output_micros_per_mtok=max(r.output, r.reasoning),
        cached_input_micros_per_mtok=None, cache_write_micros_per_mtok=None, cache_write_1h_micros_per_mtok=None,
        reasoning_micros_per_mtok=None, tier_threshold_tokens=None,
    )  # fmt: skip
    most = max_cost_micros(price, ratio, input_tokens=input_tokens, max_output_tokens=output_cap)
    assert most == cost_breakdown(worst, ratio, Metered(input_tokens=input_tokens, output_tokens=output_cap, requests=1)).total
    # any split of that input over cached, written and plain tokens, and any output within the cap
    cached_n, written_n = sorted(n % (input_tokens + 1) for n in split[:2])
    used = Metered(
        input_tokens=input_tokens, cached_input_tokens=cached_n, cache_write_tokens=written_n - cached_n,
        cache_write_1h_tokens=split[2] % (written_n - cached_n + 1), output_tokens=output_cap,
        reasoning_tokens=split[3] % (output_cap + 1), requests=1,
    )  # fmt: skip
    assert cost_micros(price, ratio, used) <= most


def _ended(*, input_tokens=0, output_tokens=0, estimated=False, end_reason=None, status=200):
    """How a request ended, as the relay tells the settlement."""
    return Outcome(status, end_reason, usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens), estimated=estimated)


def test_what_a_finished_request_is_charged():
    reported = _ended(input_tokens=1000, output_tokens=500, estimated=False, end_reason="done")
    assert request_cost(reported, PRICE, UNIT) == 7_500
    # reported usage is charged as reported even when the stream broke afterwards
    assert request_cost(_ended(input_tokens=1000, output_tokens=500, end_reason="upstream_error"), PRICE, UNIT) == 7_500
    # estimated, some output delivered before the client went: input and delivered output
    gone = _ended(input_tokens=1000, output_tokens=100, estimated=True, end_reason="client_gone")
    assert request_cost(gone, PRICE, UNIT) == 2_500 + 1_000
    # nothing delivered: an upstream error, a timeout or a client gone before the first token costs nothing
    for reason in ("upstream_error", "timeout", "client_gone"):
        assert request_cost(_ended(input_tokens=1000, output_tokens=0, estimated=True, end_reason=reason), PRICE, UNIT) == 0
    # a request refused or failed before any answer has no tokens
    assert request_cost(Outcome(502), PRICE, UNIT) == 0


def test_the_requested_output_cap():
    """Each protocol reads its own wire's cap fields (tested in its adapter) and
    hands them over in order of precedence: the first positive integer wins."""
    assert capped_output(100).max_output_tokens == 100
    assert capped_output(50, 100).max_output_tokens == 50
    assert capped_output(None, 7).max_output_tokens == 7
    for value in (None, "100", True, 0, -5):
        assert capped_output(value) is NO_HINTS


def test_the_reservation_reserves_the_output_cap_else_the_default():
    def most(hints, endpoint="chat"):
        return max_request_cost(PRICE, UNIT, endpoint=endpoint, hints=hints, input_tokens=100, default_max_output=4096)

    assert most(capped_output(10)) == max_cost_micros(PRICE, UNIT, input_tokens=100, max_output_tokens=10)
    assert most(NO_HINTS) == max_cost_micros(PRICE, UNIT, input_tokens=100, max_output_tokens=4096)
    assert most(capped_output(10), endpoint="embeddings") == max_cost_micros(PRICE, UNIT, input_tokens=100, max_output_tokens=0)
