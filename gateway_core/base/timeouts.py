"""How long to wait for an upstream: part of the channel-type contract
(:mod:`gateway_core.channel_type` re-exports it), in a module of its own so
the configuration that holds it loads without the rest of that contract."""

from __future__ import annotations

import attrs


@attrs.frozen
class Timeouts:
    """Seconds: connecting, waiting for the response head, silence between chunks."""

    connect: float = 10.0
    first_byte: float = 120.0
    idle: float = 120.0
