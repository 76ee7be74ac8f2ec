"""OpenAI's rate-limit header names and duration format."""

import pytest

from gateway_core import Allowance, RateLimitState
from gateway_openai.protocol import OpenAIProtocol, format_duration


@pytest.mark.parametrize(
    "seconds, text",
    [(0, "0s"), (0.0004, "1ms"), (0.02, "20ms"), (0.9999, "1s"), (1, "1s"), (8.64, "8.64s"),
     (60, "1m0s"), (360, "6m0s"), (59.9999, "1m0s"), (3723.5, "1h2m3.5s")],
)  # fmt: skip
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_headers_for_requests_and_tokens():
    state = RateLimitState(
        checked_at=0.0, requests=Allowance(60, 59, 1.0), tokens=Allowance(150000, 149984, 0.0064), concurrency=Allowance(2, 1, 0)
    )
    assert OpenAIProtocol().rate_limit_headers(state) == [
        (b"x-ratelimit-limit-requests", b"60"),
        (b"x-ratelimit-remaining-requests", b"59"),
        (b"x-ratelimit-reset-requests", b"1s"),
        (b"x-ratelimit-limit-tokens", b"150000"),
        (b"x-ratelimit-remaining-tokens", b"149984"),
        (b"x-ratelimit-reset-tokens", b"6ms"),
    ]


def test_only_the_limited_dimensions_get_headers():
    assert OpenAIProtocol().rate_limit_headers(RateLimitState(checked_at=0.0, concurrency=Allowance(2, 0, 0))) == []
    headers = dict(OpenAIProtocol().rate_limit_headers(RateLimitState(checked_at=0.0, tokens=Allowance(10, 0, 60))))
    assert set(headers) == {b"x-ratelimit-limit-tokens", b"x-ratelimit-remaining-tokens", b"x-ratelimit-reset-tokens"}
