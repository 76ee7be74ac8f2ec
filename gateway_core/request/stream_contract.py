"""The stream-event contract between a channel type and the core, checked as a
stream passes.

A channel type's stream yields frames whose core events must follow these
rules (``docs/writing-adapters.md`` explains them):

1. ``StreamStart`` comes first, once.
2. ``PartStart(i)`` opens part ``i``; an index is opened once per stream.
3. ``PartDelta(i)`` and ``PartStop(i)`` only for a part that is open.
4. ``StreamFinish`` comes once; after it, only ``UsageReport`` (a part still open
   then is closed by the finish). ``InputReport`` may come anywhere after the
   ``StreamStart``.
5. A frame marked ``terminal`` (the upstream's own end-of-stream marker) carries
   or follows the ``StreamFinish``: the upstream said it finished, so the
   decoder must say so too.

Breaking a rule is a bug in the adapter, not an upstream failure: the stream
ends with the client protocol's error event and a :class:`StreamContractError`
that names the channel type, and the error is logged. What is not a breach: a
stream that ends without ``StreamFinish`` and without a terminal frame (the
upstream stopped early: the relay's upstream error), and a stream without
``UsageReport`` (the usage is then estimated and the log row marked so).
"""

from __future__ import annotations


import structlog

from ..client_protocol import Frame
from ..errors import InternalError
from ..model import InputReport, PartDelta, PartStart, PartStop, StreamEvent, StreamFinish, StreamStart, UsageReport

log = structlog.get_logger("relaygate.stream")
_EVENTS = frozenset((StreamStart, PartStart, PartDelta, PartStop, StreamFinish, UsageReport, InputReport))


class StreamContractError(InternalError):
    """A channel type's stream broke the stream-event contract: its adapter's bug."""


class StreamContract:
    """Follows one stream's events and raises at the first one that breaks the contract."""

    __slots__ = ("channel_type", "_began", "_open", "_opened", "_finished")

    def __init__(self, channel_type: str) -> None:
        self.channel_type = channel_type
        self._began = False
        self._open: set[int] = set()
        self._opened: set[int] = set()
        self._finished = False

    def check(self, frame: Frame) -> None:
        for event in frame.events:
            if type(event) is PartDelta and event.index in self._open:
                continue  # the common case, first
            problem = self._problem(event)
            if problem is not None:
                raise self.broken(problem, event)
        if frame.terminal and not self._finished:
            raise self.broken("a frame marked terminal (the upstream's end of stream) came before any StreamFinish", None)

    def _problem(self, event: StreamEvent) -> str | None:
        kind = type(event)
        if kind not in _EVENTS:
            return f"{event!r}, which is not a core stream event"
        if not self._began:
            if kind is not StreamStart:
                return f"a {kind.__name__} before the StreamStart (a stream begins with one)"
            self._began = True
        elif kind is StreamStart:
            return "a second StreamStart"
        if kind is UsageReport or kind is InputReport:
            return None
        if self._finished:
            return f"a {kind.__name__} after the StreamFinish (only a UsageReport may follow it)"
        if kind is PartStart:
            index = event.index  # type: ignore[union-attr]
            if index in self._opened:
                return f"a second PartStart for part {index}"
            self._opened.add(index)
            self._open.add(index)
        elif kind is PartDelta or kind is PartStop:
            index = event.index  # type: ignore[union-attr]
            if index not in self._open:
                verb = "a PartDelta" if kind is PartDelta else "a PartStop"
                return f"{verb} for part {index}, which " + ("was already stopped" if index in self._opened else "was never started")
            if kind is PartStop:
                self._open.discard(index)
        elif kind is StreamFinish:
            self._finished = True
            self._open.clear()
        return None

    def broken(self, problem: str, event: StreamEvent | None) -> StreamContractError:
        log.error("stream contract broken", channel_type=self.channel_type, problem=problem, stream_event=repr(event))
        return StreamContractError(
            f"The channel type '{self.channel_type}' broke the stream contract: {problem}. "
            "This is a bug in its adapter, not an upstream failure."
        )
