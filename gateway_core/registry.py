"""What the loaded plugins registered: the objects the request path and the CLI use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from .config import Config, ConfigError
from .sql import Migration

if TYPE_CHECKING:
    from .hookspecs import ConfigureCommand, RunCommand
    from .channel_type import ChannelType
    from .client_protocol import ClientProtocol
    from .policy import Policy
    from .request_store import RequestStore
    from .observers import MakeObserver
    from .shared_state import SharedStateKind
    from .stores import StoreKind

Command = tuple[str, str, "ConfigureCommand", "RunCommand"]


@attrs.frozen
class LoadedPlugin:
    name: str
    module: str
    distribution: str | None
    version: str | None


@attrs.define
class Registry:
    """What the loaded plugins registered, in registration order."""

    plugins: list[LoadedPlugin] = attrs.field(factory=list)
    protocols: list[ClientProtocol] = attrs.field(factory=list)
    channel_types: dict[str, ChannelType] = attrs.field(factory=dict)
    policies: list[Policy] = attrs.field(factory=list)
    routes: list[Any] = attrs.field(factory=list)
    migrations: list[Migration] = attrs.field(factory=list)
    commands: list[Command] = attrs.field(factory=list)
    session_readers: list[Any] = attrs.field(factory=list)  # api.sessions.SessionReader
    stores: list[StoreKind] = attrs.field(factory=list)  # gateway_core.stores: kinds of database, by URL scheme
    shared_states: list[SharedStateKind] = attrs.field(factory=list)  # gateway_core.shared_state: in-process, Redis
    observers: list[MakeObserver] = attrs.field(factory=list)  # gateway_core.observers: metrics, tracing

    def shared_state_kind(self, config: Config) -> SharedStateKind:
        """Where ``config`` asks the state to be shared (the in-process default when nowhere)."""
        from .shared_state import kind_for_config

        return kind_for_config(self.shared_states, config)

    def store_kind(self, url: str) -> StoreKind:
        """The kind of database ``url`` names (a ``ConfigError`` when none is installed)."""
        from .stores import kind_for

        return kind_for(self.stores, url)

    def kind_of_store(self, store: RequestStore) -> StoreKind:
        """The kind that opened ``store`` (a test's wrapper is taken for the default kind's)."""
        from .stores import kind_of

        return kind_of(self.stores, store)

    def channel_type(self, name: str) -> ChannelType:
        try:
            return self.channel_types[name]
        except KeyError:
            known = ", ".join(sorted(self.channel_types)) or "none loaded"
            raise ConfigError(f"unknown channel type {name!r} (available: {known})") from None
