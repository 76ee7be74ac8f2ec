"""Two-way sessions with an upstream (WebSocket routes: ``RouteSpec(websocket=True)``).

A channel type that serves a session endpoint opens an :class:`UpstreamSession`
in :meth:`~gateway_core.channel_type.ChannelType.open_session`; the core relays
the client's messages to it and its messages to the client, one by one as they
come (:mod:`gateway_core.request.session_relay`). Each upstream message carries the core
events billing needs: :class:`~gateway_core.model.StreamStart` when a response
starts, :class:`~gateway_core.model.PartDelta` for its output text (for an
estimate), :class:`~gateway_core.model.UsageReport` and
:class:`~gateway_core.model.StreamFinish` when it is done.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator

import attrs

from .model import StreamEvent


@attrs.frozen
class SessionMessage:
    """One upstream message: its data as sent (text or binary) and its core events."""

    data: str | bytes
    events: tuple[StreamEvent, ...] = ()


class UpstreamSession(abc.ABC):
    """An open session with one upstream, for one client session."""

    @abc.abstractmethod
    async def send(self, data: str | bytes) -> None:
        """Send one client message upstream as it is."""

    @abc.abstractmethod
    def messages(self) -> AsyncIterator[SessionMessage]:
        """The upstream's messages as they arrive; ends when it closes the session
        normally, raises a ``GatewayError`` when it drops it or breaks a limit."""

    async def cancel_responses(self) -> None:
        """Ask the upstream to stop the responses it is producing (the client left:
        the relay still waits for their usage). Default: nothing."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the session (idempotent)."""
