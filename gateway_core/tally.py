"""What an answer produced: reported usage, or an estimate from the content delivered."""

from __future__ import annotations

import time

from .model import PartDelta, StopReason, StreamEvent, StreamFinish, Usage, UsageReport

CHARS_PER_TOKEN = 4


def estimate_tokens(chars: int) -> int:
    """A local estimate of the tokens in ``chars`` characters of text."""
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


class StreamTally:
    """Follows a stream's core events: the usage the upstream reported, how much
    content reached the client, when the first token came, how it finished."""

    __slots__ = ("usage", "output_chars", "first_token_at", "stop_reason", "finished", "_started")

    def __init__(self, started: float) -> None:
        self._started = started
        self.usage: Usage | None = None
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
            elif type(event) is StreamFinish:
                self.finished = True
                self.stop_reason = event.stop_reason

    def first_token_ms(self) -> float | None:
        if self.first_token_at is None:
            return None
        return (self.first_token_at - self._started) * 1000.0

    def estimated_output_tokens(self) -> int:
        return estimate_tokens(self.output_chars)
