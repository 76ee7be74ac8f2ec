"""Choosing upstream channels for a request.

The router keeps an in-memory index of the enabled channels, rebuilt from the
store at most once per ``ttl`` seconds (and at once after ``invalidate``), so a
request costs no database call. Candidates come highest priority first, in
weighted random order within a priority.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import Sequence

from .channel_type import Target
from .errors import GatewayError, InvalidRequestError, NotFoundError, PermissionDeniedError
from .model import ModelInfo
from .records import ChannelRecord, KeyRecord
from .store import Store
from .store.channels import list_channels


UNSUPPORTED_ENDPOINT = "unsupported_endpoint"


class ChannelIndex:
    """Enabled channels by (group, model), and every model served by any channel."""

    def __init__(self, channels: Sequence[ChannelRecord], serves) -> None:
        self.by_group_model: dict[tuple[str, str], list[ChannelRecord]] = defaultdict(list)
        self.models: dict[str, int] = {}
        self.group_models: dict[str, set[str]] = defaultdict(set)
        for channel in channels:
            if not channel.enabled:
                continue
            created = int(getattr(channel, "created_at", 0) or 0)
            for model in channel.models:
                self.models.setdefault(model, created)
                for group in channel.groups:
                    self.by_group_model[(group, model)].append(channel)
                    self.group_models[group].add(model)
        self.serves = serves


MODELS_HINT = "GET /v1/models lists the models your key may use."


def model_refusal(index: ChannelIndex, key: KeyRecord, model: str) -> GatewayError | None:
    """Why ``key`` may not call ``model``, or ``None`` when it may.

    A model no enabled channel serves is a 400 ``model_not_found``; one outside
    the key's own model restriction, or not served to the key's group, is a 403
    ``model_not_allowed``. Model names match exactly (case and hyphens count).
    """
    if model not in index.models:
        return InvalidRequestError(
            f"The model '{model}' does not exist or no channel serves it. {MODELS_HINT}",
            code="model_not_found",
            param="model",
        )
    if key.models and model not in key.models:
        return PermissionDeniedError(
            f"The model '{model}' is not allowed for this API key: the key is restricted to "
            f"{len(key.models)} model(s). {MODELS_HINT}",
            code="model_not_allowed",
            param="model",
        )
    if model not in index.group_models.get(key.group, ()):
        return _group_refusal(key, model)
    return None


def _group_refusal(key: KeyRecord, model: str) -> PermissionDeniedError:
    return PermissionDeniedError(
        f"The model '{model}' is not available to the group '{key.group}' of this key. {MODELS_HINT}",
        code="model_not_allowed",
        param="model",
    )


class Router:
    def __init__(self, store: Store, channel_types: dict, *, ttl: float = 1.0, rng: random.Random | None = None) -> None:
        self._store = store
        self._channel_types = channel_types
        self._ttl = ttl
        self._rng = rng or random.Random()
        self._index: ChannelIndex | None = None
        self._loaded_at = 0.0
        self._loading: asyncio.Future | None = None

    def invalidate(self) -> None:
        self._loaded_at = 0.0

    async def index(self) -> ChannelIndex:
        if self._index is not None and time.monotonic() - self._loaded_at < self._ttl:
            return self._index
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        loading = self._loading
        try:
            return await asyncio.shield(loading)
        finally:
            if self._loading is loading and loading.done():
                self._loading = None

    async def _load(self) -> ChannelIndex:
        channels = await self._store.read(list_channels)
        self._index = ChannelIndex(channels, self._serves)
        self._loaded_at = time.monotonic()
        return self._index

    def _serves(self, channel: ChannelRecord, endpoint: str) -> bool:
        channel_type = self._channel_types.get(channel.type)
        if channel_type is None or channel_type.wire(endpoint) is None:
            return False
        return not channel.endpoints or endpoint in channel.endpoints

    async def models_for(self, key: KeyRecord) -> list[ModelInfo]:
        """The models ``key`` may use: its group's, narrowed by its own restriction."""
        index = await self.index()
        models = index.group_models.get(key.group, set())
        if key.models:
            models = models & set(key.models)
        return [ModelInfo(id=m, created=index.models.get(m, 0)) for m in sorted(models)]

    async def candidates(self, key: KeyRecord, model: str, endpoint: str) -> list[Target]:
        """The channels to try for ``model`` at ``endpoint``, in order; raises when none."""
        index = await self.index()
        channels = index.by_group_model.get((key.group, model))
        if not channels:
            raise model_refusal(index, key, model) or _group_refusal(key, model)
        serving = [c for c in channels if self._serves(c, endpoint)]
        if not serving:
            raise NotFoundError(
                f"The endpoint '{endpoint}' is not available for the model '{model}'.",
                code=UNSUPPORTED_ENDPOINT,
            )
        return [self._target(channel, model) for channel in self._order(serving)]

    def _order(self, channels: list[ChannelRecord]) -> list[ChannelRecord]:
        if len(channels) == 1:
            return channels
        tiers: dict[int, list[ChannelRecord]] = defaultdict(list)
        for channel in channels:
            tiers[channel.priority].append(channel)
        ordered: list[ChannelRecord] = []
        for priority in sorted(tiers, reverse=True):
            ordered.extend(self._weighted_shuffle(tiers[priority]))
        return ordered

    def _weighted_shuffle(self, channels: list[ChannelRecord]) -> list[ChannelRecord]:
        """Order by weighted sampling without replacement (Efraimidis–Spirakis keys)."""
        if len(channels) == 1:
            return channels
        rng = self._rng
        return sorted(channels, key=lambda c: rng.random() ** (1.0 / max(c.weight, 1e-9)), reverse=True)

    def _target(self, channel: ChannelRecord, model: str) -> Target:
        keys = channel.api_keys
        api_key = keys[0] if len(keys) == 1 else self._rng.choice(keys) if keys else ""
        return Target(channel=channel, api_key=api_key, upstream_model=channel.upstream_model(model))
