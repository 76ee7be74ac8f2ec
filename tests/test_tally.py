"""gateway_core.tally: the input estimate is computed only when an answer's usage will
be estimated, and then is the one the request's text gives."""

from __future__ import annotations

from gateway_core.model import Usage
from gateway_core.request.outcome import answered
from gateway_core.tally import estimate_tokens, input_estimate, text_chars

BODY = {"model": "m", "messages": [{"role": "user", "content": "one two three four five six"}]}


def walks() -> tuple[list[int], object]:
    calls: list[int] = []

    def estimate() -> int:
        calls.append(1)
        return estimate_tokens(text_chars(BODY))

    return calls, estimate


def test_a_reported_usage_skips_the_walk_of_the_body():
    calls, estimate = walks()
    assert input_estimate(Usage(input_tokens=12, output_tokens=3), estimate) == 0  # type: ignore[arg-type]
    assert calls == []


def test_no_usage_or_an_implausible_one_gets_the_estimate_of_the_text():
    expected = estimate_tokens(len("one two three four five six") + len("m") + len("user"))
    for usage in (None, Usage(input_tokens=-1, output_tokens=3)):
        calls, estimate = walks()
        tokens = input_estimate(usage, estimate)  # type: ignore[arg-type]
        assert tokens == expected and calls == [1]
        assert answered(usage, tokens, 8).usage.input_tokens == expected  # what the row is charged for
