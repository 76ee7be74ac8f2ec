"""Every hook a Relaygate plugin can implement.

Hooks run once, at start-up, and hand objects to a ``register`` callback. The
request path then calls those objects directly, never ``pm.hook``. Each hook
takes ``register`` and ``config`` (the loaded :class:`gateway_core.config.Config`;
``config.plugin_settings(name)`` holds a plugin's table from ``plugins.toml``).
An implementation may accept a subset of the arguments. Hooks evolve by adding
arguments only. ``docs/hooks.md`` has one section per hook.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .channel_type import ChannelType
    from .client_protocol import ClientProtocol
    from .commands.kit import CommandContext
    from .config import Config
    from .observers import MakeObserver
    from .policy import Policy
    from .shared_state import SharedStateKind
    from .sign_in import SessionReader
    from .sql import Migrate
    from .stores import StoreKind

ConfigureCommand = Callable[[argparse.ArgumentParser], None]
RunCommand = Callable[[argparse.Namespace, "CommandContext"], int]

# the ``register`` callback each hook hands a plugin
RegisterClientProtocol = Callable[["ClientProtocol"], None]
RegisterChannelType = Callable[["ChannelType"], None]
RegisterPolicy = Callable[["Policy"], None]
RegisterRoute = Callable[[Any], None]  # a starlette.routing.BaseRoute
RegisterMigration = Callable[[str, "Migrate"], None]
RegisterCommand = Callable[[str, str, ConfigureCommand, RunCommand], None]
RegisterSessionReader = Callable[["SessionReader"], None]  # gateway_core.sign_in
RegisterStore = Callable[["StoreKind"], None]
RegisterSharedState = Callable[["SharedStateKind"], None]
RegisterObserver = Callable[["MakeObserver"], None]  # gateway_core.observers
ServeSetup = Callable[[int, dict[str, str]], None]  # (workers, the workers' environment) -> None
RegisterServeSetup = Callable[[ServeSetup], None]
RegisterSetting = Callable[..., None]  # register(table, key, *, default=None, variable=None, secret=False)

PROJECT = "relaygate"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_client_protocols(register: RegisterClientProtocol, config: Config) -> None:
    """Register client protocols.

    Call ``register(protocol)`` with each :class:`gateway_core.client_protocol.ClientProtocol`
    this plugin provides. Called once when an app is built; the protocol's routes
    are mounted on the app in registration order.
    """


@hookspec
def register_channel_types(register: RegisterChannelType, config: Config) -> None:
    """Register channel types.

    Call ``register(channel_type)`` with each
    :class:`gateway_core.channel_type.ChannelType`; its ``name`` is what
    ``relaygate channel add --type`` accepts. Called once per app and once per
    CLI invocation that validates a channel type.
    """


@hookspec
def register_policies(register: RegisterPolicy, config: Config) -> None:
    """Register request policies.

    Call ``register(policy)`` with each :class:`gateway_core.policy.Policy`. The
    pipeline runs policies in ascending ``order`` (the built-in ones use
    100, 200, ... so a plugin can slot in between). Called once per app.
    """


@hookspec
def register_routes(register: RegisterRoute, config: Config) -> None:
    """Register extra Starlette routes (the console mounts itself this way).

    Call ``register(route)`` with a ``starlette.routing.BaseRoute`` (``Route`` or
    ``Mount``). These routes do not pass the policy pipeline: they handle their
    own authentication. Called once per app, after the protocol routes.
    """


@hookspec
def register_migrations(register: RegisterMigration, config: Config) -> None:
    """Register database migrations.

    Call ``register(name, migrate)`` where ``migrate(schema)`` receives a
    :class:`gateway_core.sql.SchemaHandle`: ``schema.dialect`` names the
    database (``"sqlite"`` or ``"postgresql"``) and ``schema.execute(sql,
    params)`` runs one statement with ``?`` placeholders inside the migration's
    transaction. Write SQL both dialects accept, or branch on ``dialect``. Names
    are unique and ordered as strings (``"0001_initial"``); each runs once, in a
    transaction, when a store opens. At run time the plugin reads and writes its
    tables through ``services.sql`` (a :class:`gateway_core.sql.SqlHandle`).
    """


@hookspec
def register_commands(register: RegisterCommand, config: Config) -> None:
    """Register ``relaygate`` sub-commands.

    Call ``register(name, help, configure, run)``: ``configure(parser)`` adds
    arguments to an ``argparse`` parser and ``run(args, cli)`` performs the
    command with a :class:`gateway_core.commands.kit.CommandContext` and returns an exit
    status. Called once per CLI invocation.
    """


@hookspec
def register_session_readers(register: RegisterSessionReader, config: Config) -> None:
    """Register readers of sign-in sessions for the management API (the console does).

    Call ``register(reader)`` with a :class:`gateway_core.sign_in.SessionReader`:
    ``await reader.read_session(scope)`` returns a ``SessionUser`` (the user of
    the request's live session, and whether the request carries the session's
    CSRF token in ``X-CSRF-Token``) or ``None``. An API request without a bearer
    token is asked of each reader in turn; writes need the CSRF token. Called
    once per app.
    """


@hookspec
def register_stores(register: RegisterStore, config: Config) -> None:
    """Register kinds of database the gateway can keep its state in.

    Call ``register(kind)`` with a :class:`gateway_core.stores.StoreKind`: the URL
    schemes it serves and how it opens its store and ports, migrates, checks a
    database before ``serve`` and takes part in ``copy-store``. The database URL
    (``--db``, ``RELAYGATE_DB``, ``[gateway] db``) picks the kind; the core
    registers SQLite (file paths, ``sqlite:///``); the ``relaygate-postgres`` plugin
    PostgreSQL (``postgresql://``). Called once per app and per CLI invocation.
    """


@hookspec
def register_shared_state(register: RegisterSharedState, config: Config) -> None:
    """Register where the workers and replicas of a gateway share their state.

    Call ``register(kind)`` with a :class:`gateway_core.shared_state.SharedStateKind`:
    whether the configuration asks for it, and how it opens one gateway's share
    (rate limiter, sign-in and redemption throttles, session affinity,
    invalidations, shared breakers). The core registers the one in this process
    (the default); the ``relaygate-redis`` plugin registers Redis (``[gateway]
    redis``). Called once per app and per CLI invocation.
    """


@hookspec
def register_observers(register: RegisterObserver, config: Config) -> None:
    """Register observers of the request path.

    Call ``register(make)``: ``make(gateway)`` returns the app's
    :class:`gateway_core.observers.Observer` (or ``None``: off for this app). It is
    told each request's start, upstream attempts (and may give the trace headers
    an attempt carries), stream start and end, and end with its outcome and usage
    row, and every breaker change. The first-party plugins ``relaygate-metrics``
    (Prometheus) and ``relaygate-tracing`` (OpenTelemetry) register theirs this
    way. Called once per app.
    """


@hookspec
def register_serve_setup(register: RegisterServeSetup, config: Config) -> None:
    """Register what ``relaygate serve`` prepares before it serves.

    Call ``register(setup)``: ``setup(workers, env)`` runs once in the serving
    process, before the app is built and before any worker process starts;
    ``workers`` is how many will serve, ``env`` the environment each worker gets
    (with one worker it becomes this process's), to which ``setup`` may add what
    the workers must find ready (``relaygate-metrics`` names the folder its
    workers add their metrics up in). Called once per app and per ``serve``; the
    set-ups run in ``serve`` only.
    """


@hookspec
def register_settings(register: RegisterSetting, config: Config) -> None:
    """Declare the keys of a plugin's table in ``plugins.toml``, for ``relaygate config show``.

    Call ``register(table, key, default=None, variable=None, secret=False)`` once per
    key: ``table`` names the table under ``[plugins]`` (``"console"``, or
    ``"console.sso"`` for ``[plugins.console.sso]``), ``default`` is what the plugin
    uses when nothing sets the key (``None``: unset), ``variable`` the environment
    variable that wins over the file, when there is one, and ``secret`` says the value
    is never shown (a client secret, a token). The plugin still reads its settings
    itself (``config.plugin_settings(name)``); this only lets ``config show`` print
    each key with its source (the variable, ``plugins.toml`` or the default). A key
    declared twice stops the command. Keys of a table nobody declares are shown as the
    file has them. Called by ``relaygate config show`` only.
    """
