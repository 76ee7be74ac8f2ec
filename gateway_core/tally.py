"""What an answer produced: reported usage, or an estimate from the content delivered.

**Estimates.** When an upstream reports no usage, tokens are estimated at one per
four characters (:data:`CHARS_PER_TOKEN`): the output from the characters that
reached the client, the input from the *text* of the request
(:func:`text_chars`) — never from its size in bytes, which counts images, audio
and files sent inline as base64 (a 300 KB image is a few hundred tokens, not
75,000). An input count the upstream reported before the stream broke
(:class:`~gateway_core.model.InputReport`) wins over the estimate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .model import InputReport, PartDelta, StopReason, StreamEvent, StreamFinish, Usage, UsageReport

CHARS_PER_TOKEN = 4
_BINARY_MIN_CHARS = 256  # shorter strings are counted as text whatever they hold
_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_\r\n")
# no answer holds a billion tokens: a larger count is implausible, not a bill to pay
_COUNT_MAX = 10**9


class ImplausibleUsage(ValueError):
    """An upstream reported a token count that is not a non-negative integer."""


def token_count(value: object) -> int:
    """One token count as an upstream reported it: 0 when absent (``None``), an
    integral float taken as its integer. Anything else that is not an integer
    from 0 to a billion raises :class:`ImplausibleUsage`: an adapter then reports
    no usage at all, and the request is billed on an estimate marked so."""
    if value is None:
        return 0
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int or not 0 <= value <= _COUNT_MAX:
        raise ImplausibleUsage(f"a token count of {value!r}")
    return value


def plausible(usage: Usage) -> bool:
    """Whether every count of ``usage`` is an integer from 0 to a billion."""
    counts = (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_write_tokens, usage.reasoning_tokens)
    return all(type(n) is int and 0 <= n <= _COUNT_MAX for n in counts)


def input_estimate(usage: Usage | None, estimate: Callable[[], int]) -> int:
    """The input estimate an answer with ``usage`` needs: ``estimate()`` when its usage
    will be estimated (none reported, or a report that is not plausible), else 0 —
    an answer with its usage reported skips the walk of the request's body."""
    return estimate() if usage is None or not plausible(usage) else 0


def estimate_tokens(chars: int) -> int:
    """A local estimate of the tokens in ``chars`` characters of text."""
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def text_chars(value: Any) -> int:
    """The characters of text in a parsed JSON body: every string value, except
    inline binary data (a ``data:`` URL, or a long string of base64 alone)."""
    if isinstance(value, str):
        return 0 if _binary(value) else len(value)
    if isinstance(value, dict):
        return sum(text_chars(item) for item in value.values())
    if isinstance(value, list):
        return sum(text_chars(item) for item in value)
    return 0


def _binary(text: str) -> bool:
    if text.startswith("data:") and ";base64," in text[:200]:
        return True
    if len(text) < _BINARY_MIN_CHARS or " " in text:
        return False
    return text.isascii() and _BASE64.issuperset(text.encode())


class StreamTally:
    """Follows a stream's core events: the usage the upstream reported (and the
    input it counted before the end), how much content reached the client, when
    the first token came, how it finished."""

    __slots__ = ("usage", "input_usage", "output_chars", "first_token_at", "stop_reason", "finished", "_started")

    def __init__(self, started: float) -> None:
        self._started = started
        self.usage: Usage | None = None
        self.input_usage: Usage | None = None
        self.output_chars = 0
        self.first_token_at: float | None = None
        self.stop_reason: StopReason | None = None
        self.finished = False

    def observe(self, events: tuple[StreamEvent, ...]) -> None:
        for event in events:
            if type(event) is PartDelta:
                if self.first_token_at is None:
                    self.first_token_at = time.perf_counter()
                self.output_chars += len(event.text)
            elif type(event) is UsageReport:
                self.usage = event.usage
            elif type(event) is InputReport:
                self.input_usage = event.usage
            elif type(event) is StreamFinish:
                self.finished = True
                self.stop_reason = event.stop_reason

    def first_token_ms(self) -> float | None:
        if self.first_token_at is None:
            return None
        return (self.first_token_at - self._started) * 1000.0

    def estimated_output_tokens(self) -> int:
        return estimate_tokens(self.output_chars)
