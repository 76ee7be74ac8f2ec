"""Choosing upstream channels for a request.

The router keeps an in-memory index of the enabled channels, rebuilt from the
store at most once per ``ttl`` seconds (and at once after ``invalidate``), so a
request costs no database call. Candidates come highest priority first, in
weighted random order within a priority, each as a :class:`Route`: the channel,
its usable upstream keys and its timeouts. Which of them is healthy right now is
the business of :mod:`gateway_core.routing.health`.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence

import attrs
import structlog

from .. import endpoints
from ..billing.catalogue import CatalogueModel, load_catalogue
from ..channel_type import Timeouts
from ..errors import GatewayError, InvalidRequestError, NotFoundError, PermissionDeniedError, UpstreamUnavailableError
from ..model import ModelInfo
from ..records import ChannelRecord, KeyRecord, key_fingerprint
from ..store.request_store import ModelFallback, RequestStore
from .snapshot import TtlSnapshot


CHANNEL_TYPE_NOT_LOADED = "channel_type_not_loaded"

log = structlog.get_logger("relaygate.router")


@attrs.frozen(eq=False)
class Route:
    """A channel as the relay tries it.

    ``keys`` are its upstream keys the upstream has not refused, as ``(position,
    key)``; a channel without keys (a local one) has the single key ``""``.
    ``timeouts`` are the channel's own, else the gateway's.
    """

    channel: ChannelRecord
    keys: tuple[tuple[int, str], ...] = attrs.field(repr=False)
    timeouts: Timeouts
    concurrency: int = 0


def route_for(channel: ChannelRecord, defaults: Timeouts) -> Route:
    keys = tuple((n, key) for n, key in enumerate(channel.api_keys) if channel.key_disabled(key) is None)
    if not channel.api_keys:
        keys = ((0, ""),)
    timeouts = defaults
    if channel.timeout_connect or channel.timeout_first_byte or channel.timeout_idle:
        timeouts = Timeouts(
            connect=channel.timeout_connect or defaults.connect,
            first_byte=channel.timeout_first_byte or defaults.first_byte,
            idle=channel.timeout_idle or defaults.idle,
        )
    return Route(channel=channel, keys=keys, timeouts=timeouts, concurrency=max(0, channel.concurrency))


class ChannelIndex:
    """Enabled channels by (group, model), and every model served by any channel.

    A channel whose type is not among ``loaded`` (its adapter is not installed or
    not loaded) serves nothing: it is kept apart in ``unloaded`` (the missing
    types by group and model) and ``unloaded_channels``.
    """

    def __init__(
        self, channels: Sequence[ChannelRecord], serves: Callable[[ChannelRecord, str], bool], timeouts: Timeouts = Timeouts(), loaded: Collection[str] | None = None
    ) -> None:
        self.by_group_model: dict[tuple[str, str], list[Route]] = defaultdict(list)
        self.models: dict[str, int] = {}
        self.group_models: dict[str, set[str]] = defaultdict(set)
        self.unloaded: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.unloaded_channels: list[ChannelRecord] = []
        for channel in channels:
            if not channel.enabled:
                continue
            if loaded is not None and channel.type not in loaded:
                self.unloaded_channels.append(channel)
                for model in channel.models:
                    for group in channel.groups:
                        self.unloaded[(group, model)].add(channel.type)
                continue
            route = route_for(channel, timeouts)
            created = int(getattr(channel, "created_at", 0) or 0)
            for model in channel.models:
                self.models.setdefault(model, created)
                for group in channel.groups:
                    self.by_group_model[(group, model)].append(route)
                    self.group_models[group].add(model)
        self.serves = serves


MODELS_HINT = "GET /v1/models lists the models your key may use."
MODEL_NOT_FOUND = "model_not_found"
MODEL_NOT_ALLOWED = "model_not_allowed"


def model_refusal(index: ChannelIndex, key: KeyRecord, model: str, *, hide: bool = False) -> GatewayError | None:
    """Why ``key`` may not call ``model``, or ``None`` when it may.

    A model no enabled channel serves is 400 ``model_not_found``; one outside the
    key's own model restriction or not served to the key's group is 403
    ``model_not_allowed`` saying which (the spec's permission error). ``hide``
    (``[gateway] hide_forbidden_models``) answers the latter as the former, so that
    a key cannot learn which models exist in groups it cannot use; the reason is
    then logged. Model names match exactly (case and hyphens count).
    """
    refusal = _model_refusal(index, key, model)
    return None if refusal is None else _as_shown(refusal, model, hide)


def _as_shown(refusal: GatewayError, model: str, hide: bool) -> GatewayError:
    """The refusal as the client sees it: with ``hide``, the same for a model that
    does not exist and one the key may not use."""
    if not hide or refusal.code not in (MODEL_NOT_FOUND, MODEL_NOT_ALLOWED):
        return refusal
    log.info("model refused", model=model, reason=refusal.message)
    return InvalidRequestError(
        f"The model '{model}' was not found or is not permitted for this key. {MODELS_HINT}", code=MODEL_NOT_FOUND, param="model"
    )


def _model_refusal(index: ChannelIndex, key: KeyRecord, model: str) -> GatewayError | None:
    missing = index.unloaded.get((key.group, model))
    if missing and model not in index.group_models.get(key.group, ()) and (not key.models or model in key.models):
        types = ", ".join(f"'{name}'" for name in sorted(missing))
        return UpstreamUnavailableError(
            f"The model '{model}' is served here only by channels of type {types}, whose adapter is not "
            "loaded on this gateway. Ask the gateway's operator to install it (see `relaygate plugins`).",
            code=CHANNEL_TYPE_NOT_LOADED,
        )
    if model not in index.models:
        return InvalidRequestError(
            f"The model '{model}' does not exist or no channel serves it. {MODELS_HINT}",
            code=MODEL_NOT_FOUND,
            param="model",
        )
    if key.models and model not in key.models:
        return PermissionDeniedError(
            f"This API key lacks permission for the model '{model}': the key is restricted to "
            f"{len(key.models)} model(s). {MODELS_HINT}",
            code=MODEL_NOT_ALLOWED,
            param="model",
        )
    if model not in index.group_models.get(key.group, ()):
        return _group_refusal(key, model)
    return None


def _group_refusal(key: KeyRecord, model: str) -> PermissionDeniedError:
    return PermissionDeniedError(
        f"This API key lacks permission for the model '{model}': it is not available to the key's group '{key.group}'. {MODELS_HINT}",
        code=MODEL_NOT_ALLOWED,
        param="model",
    )


def _limit(known: Mapping[str, CatalogueModel], model: str, field: str) -> int | None:
    entry = known.get(model)
    return getattr(entry, field) if entry is not None else None


class Router:
    def __init__(
        self,
        store: RequestStore,
        channel_types: dict,
        *,
        ttl: float = 1.0,
        rng: random.Random | None = None,
        timeouts: Timeouts = Timeouts(),
        hide_forbidden_models: bool = False,
        fallbacks: Callable[[], Awaitable[list[ModelFallback]]] | None = None,
    ) -> None:
        self._store = store
        self.hide_forbidden_models = hide_forbidden_models
        self._channel_types = channel_types
        self._rng = rng or random.Random()
        self._timeouts = timeouts
        self._snapshot = TtlSnapshot(self._read_index, ttl=ttl)
        # model fallbacks by (scope, owner, model), read only when a request needs one
        self._fallbacks = None if fallbacks is None else TtlSnapshot(_fallback_table(fallbacks), ttl=ttl)
        self._warned: set[tuple[int, str]] = set()  # channels already reported as of a type not loaded

    def invalidate(self) -> None:
        self._snapshot.invalidate()
        if self._fallbacks is not None:
            self._fallbacks.invalidate()

    async def fallback_for(self, key: KeyRecord, model: str) -> str | None:
        """The model that serves ``key``'s request for ``model`` when every channel
        of ``model`` failed before its first byte: the key's own fallback, else its
        group's (:mod:`gateway_core.routing.fallbacks`)."""
        if self._fallbacks is None:
            return None
        table = await self._fallbacks.current()
        return table.get(("key", str(key.id), model)) or table.get(("group", key.group, model))

    def secret_of(self, channel_id: int, fingerprint: str) -> str | None:
        """The upstream key of a channel with this fingerprint, as last read (for
        breaker messages from other replicas, which name keys by fingerprint)."""
        index = self._snapshot.latest()
        if index is None:
            return None
        for routes in index.by_group_model.values():
            for route in routes:
                if route.channel.id == channel_id:
                    return next((key for key in route.channel.api_keys if key_fingerprint(key) == fingerprint), None)
        return None

    async def index(self) -> ChannelIndex:
        return await self._snapshot.current()

    def known_model(self, model: str) -> bool:
        """Whether a channel serves ``model``, as the last index read says (no await)."""
        index = self._snapshot.latest()
        return index is not None and model in index.models

    async def _read_index(self) -> ChannelIndex:
        index = ChannelIndex(list(await self._store.list_channels()), self._serves, self._timeouts, loaded=self._channel_types)
        self._warn_unloaded(index)
        return index

    def _warn_unloaded(self, index: ChannelIndex) -> None:
        """Say once per channel that its type is not loaded (at start-up, and when
        such a channel is added or enabled later)."""
        for channel in index.unloaded_channels:
            if (channel.id, channel.type) not in self._warned:
                self._warned.add((channel.id, channel.type))
                log.warning(
                    "channel type not loaded: the channel serves nothing until its adapter is installed and loaded",
                    channel=channel.name, channel_type=channel.type, loaded=sorted(self._channel_types),
                )

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
        known = load_catalogue().models
        return [
            ModelInfo(id=m, created=index.models.get(m, 0), input_token_limit=_limit(known, m, "context_window"),
                      output_token_limit=_limit(known, m, "max_output_tokens"))
            for m in sorted(models)
        ]  # fmt: skip

    async def candidates(self, key: KeyRecord, model: str, endpoint: str) -> list[Route]:
        """The channels to try for ``model`` at ``endpoint``, in order; raises when none."""
        index = await self.index()
        routes = index.by_group_model.get((key.group, model))
        if not routes:
            refusal = _model_refusal(index, key, model) or _group_refusal(key, model)
            raise _as_shown(refusal, model, self.hide_forbidden_models)
        serving = [r for r in routes if self._serves(r.channel, endpoint)]
        if not serving:
            raise NotFoundError(
                f"The endpoint '{endpoint}' is not available for the model '{model}'.",
                code=endpoints.UNSUPPORTED_ENDPOINT,
            )
        return self.order(serving)

    def order(self, routes: list[Route]) -> list[Route]:
        """Highest priority first; weighted random order within a priority."""
        if len(routes) == 1:
            return routes
        tiers: dict[int, list[Route]] = defaultdict(list)
        for route in routes:
            tiers[route.channel.priority].append(route)
        ordered: list[Route] = []
        for priority in sorted(tiers, reverse=True):
            ordered.extend(self._weighted_shuffle(tiers[priority]))
        return ordered

    def _weighted_shuffle(self, routes: list[Route]) -> list[Route]:
        """Order by weighted sampling without replacement (Efraimidis–Spirakis keys).
        A channel of weight 0 comes last in its tier (a standby)."""
        if len(routes) == 1:
            return routes
        rng = self._rng
        return sorted(routes, key=lambda r: rng.random() ** (1.0 / max(r.channel.weight, 1e-9)), reverse=True)


def _fallback_table(read: Callable[[], Awaitable[list[ModelFallback]]]) -> Callable[[], Awaitable[dict[tuple[str, str, str], str]]]:
    async def table() -> dict[tuple[str, str, str], str]:
        return {(f.scope, f.owner, f.model): f.fallback for f in await read()}

    return table
