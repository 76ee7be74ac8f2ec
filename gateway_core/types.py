"""Types shared by the core and its plugins: ASGI callables (as Starlette spells
them) and the ``register`` callbacks each hook hands a plugin."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .channel_type import ChannelType
    from .client_protocol import ClientProtocol
    from .commands.kit import CommandContext
    from .policy import Policy
    from .sql import SchemaHandle
    from .observers import MakeObserver
    from .shared_state import SharedStateKind
    from .stores import StoreKind

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

Migrate = Callable[["SchemaHandle"], None]
"""A migration: ``migrate(schema)`` changes the schema once (see ``register_migrations``)."""
Migration = tuple[str, Migrate]  # its unique name, and the migration
ConfigureCommand = Callable[[argparse.ArgumentParser], None]
RunCommand = Callable[[argparse.Namespace, "CommandContext"], int]

RegisterClientProtocol = Callable[["ClientProtocol"], None]
RegisterChannelType = Callable[["ChannelType"], None]
RegisterPolicy = Callable[["Policy"], None]
RegisterRoute = Callable[[Any], None]  # a starlette.routing.BaseRoute
RegisterMigration = Callable[[str, Migrate], None]
RegisterCommand = Callable[[str, str, ConfigureCommand, RunCommand], None]
RegisterSessionReader = Callable[[Any], None]  # a gateway_core.api.sessions.SessionReader
RegisterStore = Callable[["StoreKind"], None]
RegisterSharedState = Callable[["SharedStateKind"], None]
RegisterObserver = Callable[["MakeObserver"], None]  # gateway_core.observers
