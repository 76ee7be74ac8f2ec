"""What every admin operation runs with: the store's admin port, the loaded
channel types (to validate channels) and the caches to tell of a change."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..shared import events
from ..records import PriceRecord
from .port import AdminStore

if TYPE_CHECKING:
    from ..channel_type import ChannelType
    from ..gateway import Gateway


class Invalidated(Protocol):
    """A cache that forgets everything at once (the router's channel index, the price book)."""

    def invalidate(self) -> None: ...


class KeysInvalidated(Protocol):
    """The key cache: forgets one key, one user's keys, or all."""

    def invalidate(self, key_hash: str | None = None) -> None: ...

    def invalidate_key(self, key_id: int) -> None: ...

    def invalidate_user(self, user_id: int) -> None: ...


@attrs.frozen
class Caches:
    """The caches of the gateway running in this process, told of each change so
    it is seen at once, and ``publish``: with Redis, the invalidation every
    other gateway hears (:mod:`gateway_core.shared.events`), within
    milliseconds. Without Redis, gateways in other processes see a change
    within their caches' lifetime (a second)."""

    keys: KeysInvalidated | None = None
    channels: Invalidated | None = None
    prices: Invalidated | None = None
    publish: Callable[[dict[str, Any]], None] | None = None  # queues a message; never waits

    def key_changed(self, key_id: int) -> None:
        if self.keys is not None:
            self.keys.invalidate_key(key_id)
        self._tell(events.message(events.KEY, key_id))

    def user_changed(self, user_id: int) -> None:
        """A user's state, groups or limits: every key of the user carries them."""
        if self.keys is not None:
            self.keys.invalidate_user(user_id)
        self._tell(events.message(events.USER, user_id))

    def group_changed(self) -> None:
        """A group's ratio or limits: cached keys carry their group's limits, prices its ratio."""
        if self.keys is not None:
            self.keys.invalidate()
        if self.prices is not None:
            self.prices.invalidate()
        self._tell(events.message(events.GROUP))

    def channels_changed(self) -> None:
        if self.channels is not None:
            self.channels.invalidate()
        self._tell(events.message(events.CHANNELS))

    def prices_changed(self) -> None:
        if self.prices is not None:
            self.prices.invalidate()
        self._tell(events.message(events.PRICES))

    def _tell(self, event: dict[str, Any]) -> None:
        if self.publish is not None:
            self.publish(event)


NO_CACHES = Caches()


@attrs.frozen
class Admin:
    """The first argument of every admin operation."""

    store: AdminStore
    channel_types: Mapping[str, ChannelType] = attrs.field(factory=dict)
    caches: Caches = NO_CACHES
    # the prices charged for models the operator has not priced (the catalogue's; empty
    # with [gateway] price_catalogue = false): what the fronts show beside the operator's
    catalogue: Mapping[str, PriceRecord] = attrs.field(factory=dict)
    # the channel types known to need no upstream key without reading ``channel_types``
    # (their plugins declare them): listing a keyless channel imports no adapter
    keyless_types: frozenset[str] = frozenset()

    @classmethod
    def of(cls, gateway: Gateway) -> Admin:
        """The admin of a running gateway: its store, channel types and caches."""
        caches = Caches(keys=gateway.keys, channels=gateway.router, prices=gateway.prices, publish=gateway.publish_invalidation)
        registry = gateway.registry
        return cls(gateway.admin, registry.channel_types, caches, catalogue_of(gateway.config.price_catalogue), registry.keyless_channel_types)


def catalogue_of(enabled: bool) -> Mapping[str, PriceRecord]:
    """The catalogue's prices when ``[gateway] price_catalogue`` is on, else none."""
    if not enabled:
        return {}
    from ..billing.catalogue import load_catalogue

    return load_catalogue().prices()
