"""Listing an upstream's models in a test: a channel type's ``list_models``
against a fake upstream over loopback, through the admin layer's runner (the
one every front uses), so a test sees the ids or the message an operator would."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

from ..admin.channel_models import UpstreamModels, list_upstream_models
from ..channel_type import ChannelType, ListingLimits, Timeouts
from ..records import ChannelRecord

QUICK = Timeouts(connect=2.0, first_byte=2.0, idle=2.0)


async def upstream_models(
    channel_type: ChannelType,
    base_url: str,
    api_key: str,
    *,
    models: tuple[str, ...] = (),
    settings: Mapping[str, Any] | None = None,
    timeouts: Timeouts = QUICK,
    limits: ListingLimits = ListingLimits(),
    match: str | None = None,
) -> UpstreamModels:
    """What ``channel_type`` lists for a channel on ``base_url`` with ``api_key``
    (``models``: the channel's own, for the ``new`` ones)."""
    channel = ChannelRecord(
        id=1, name="listed", type=channel_type.name, base_url=channel_type.normalize_base_url(base_url),
        api_keys=(api_key,) if api_key else (), models=models, model_map={}, groups=("default",), settings=dict(settings or {}),
    )  # fmt: skip
    async with aiohttp.ClientSession() as session:
        return await list_upstream_models(
            channel_type, session, channel, timeouts=timeouts, request_id="test-listing", limits=limits, match=match
        )
