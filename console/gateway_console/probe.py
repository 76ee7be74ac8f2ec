"""Probing (testing) a channel from the console: the core's channel test
(:mod:`gateway_core.probe`), with the running gateway's session and timeouts."""

from __future__ import annotations

from typing import Any

from gateway_core.probe import ProbeResult
from gateway_core.probe import probe_channel as _probe
from gateway_core.records import ChannelRecord

__all__ = ["ProbeResult", "probe_channel"]


async def probe_channel(services: Any, channel: ChannelRecord, request_id: str, model: str | None = None) -> ProbeResult:
    channel_type = services.registry.channel_types.get(channel.type)
    return await _probe(
        channel_type, services.session, channel, timeouts=services.config.timeouts, request_id=request_id, model=model
    )
