"""What the loaded plugins registered: the objects the request path and the CLI use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from .config import ConfigError
from .types import ConfigureCommand, Migrate, Migration, RunCommand

if TYPE_CHECKING:
    from .channel_type import ChannelType
    from .client_protocol import ClientProtocol
    from .policy import Policy

Command = tuple[str, str, ConfigureCommand, RunCommand]


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

    def channel_type(self, name: str) -> ChannelType:
        try:
            return self.channel_types[name]
        except KeyError:
            known = ", ".join(sorted(self.channel_types)) or "none loaded"
            raise ConfigError(f"unknown channel type {name!r} (available: {known})") from None
