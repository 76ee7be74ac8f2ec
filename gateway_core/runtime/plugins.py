"""Loading plugins and collecting what they register.

Each app (and each CLI run) builds its own ``PluginManager``: plugins are found
through entry points of the group ``relaygate``, filtered by ``plugins.toml``.
Hooks are called once here; the :class:`Registry` keeps the objects they handed
over, which the request path then uses directly.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from typing import Any

import pluggy

from .. import hookspecs
from ..config import Config, ConfigError
from ..base.config_env import PluginSetting
from . import entry_points
from .entry_points import LoadedPlugin
from .registry import Command, Registry
from ..hookspecs import ConfigureCommand, RunCommand
from ..sql import Migrate, Migration

ENTRY_POINT_GROUP = "relaygate"
# Infrastructure plugins (a store kind, shared state, metrics and traces) load whenever
# they are installed, whatever plugins.toml's `load` says: each adds a kind the
# configuration chooses (a database URL's scheme) or observes the gateway (GET /metrics),
# never behaviour of the request path's own.
INFRASTRUCTURE_GROUP = "relaygate.infrastructure"

# The core's own behaviour, named and loaded like any plugin, registered through the same hooks.
DEFAULT_PLUGINS = {
    "core.policies": "gateway_core.policies.plugin",
    "core.migrations": "gateway_core.store.plugin",
    "core.stores": "gateway_core.store.kinds",
    "core.shared_state": "gateway_core.shared.kinds",
    "core.serve": "gateway_core.commands.serve",
    "core.database": "gateway_core.commands.database",
    "core.users": "gateway_core.commands.users",
    "core.teams": "gateway_core.commands.teams",
    "core.prices": "gateway_core.commands.prices",
    "core.keys": "gateway_core.commands.keys",
    "core.plugins": "gateway_core.commands.plugins",
    "core.channels": "gateway_core.commands.channels",
    "core.channel_models": "gateway_core.commands.channel_models",
    "core.limits": "gateway_core.commands.limits",
    "core.fallbacks": "gateway_core.commands.fallbacks",
    "core.billing": "gateway_core.commands.billing",
    "core.retention": "gateway_core.commands.retention",
    "core.codes": "gateway_core.commands.codes",
    "core.new_adapter": "gateway_core.commands.new_adapter",
    "core.tokens": "gateway_core.commands.tokens",
    "core.secrets": "gateway_core.commands.secrets",
    "core.config": "gateway_core.commands.config",
}


def installed_entry_points(group: str = ENTRY_POINT_GROUP) -> list[entry_points.EntryPoint]:
    """The installed entry points of ``group``, by name (:mod:`.entry_points`: the
    distributions are read once per process, and a plugin installed later is loaded
    by the next process)."""
    return list(entry_points.entry_points(group))


def build_plugin_manager(config: Config, extra_plugins: Iterable[Any] = ()) -> tuple[pluggy.PluginManager, list[LoadedPlugin]]:
    """A fresh plugin manager with the built-in plugins and the selected entry points.

    ``extra_plugins`` are registered directly (tests and embedders use it).
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    core_version = entry_points.version("relaygate")
    for name, module_name in reversed(DEFAULT_PLUGINS.items()):  # pluggy calls the last registered first
        pm.register(importlib.import_module(module_name), name=name)
    loaded = [LoadedPlugin(name, module, "relaygate", core_version) for name, module in DEFAULT_PLUGINS.items()]
    available = {ep.name: ep for ep in installed_entry_points()}
    if config.load is not None:
        twice = sorted({name for name in config.load if config.load.count(name) > 1})
        if twice:
            where = config.source or "plugins.toml"
            raise ConfigError(f"{where}: plugin(s) named twice in 'load': {', '.join(map(repr, twice))}")
        unknown = [name for name in config.load if name not in available]
        if unknown:
            have = ", ".join(sorted(available)) or "none"
            where = config.source or "plugins.toml"
            raise ConfigError(
                f"{where}: unknown plugin(s) {', '.join(map(repr, unknown))}; installed: {have}"
            )
        selected = [available[name] for name in config.load]
    else:
        selected = list(available.values())
    for ep in [*installed_entry_points(INFRASTRUCTURE_GROUP), *selected]:
        try:
            module = ep.load()
        except Exception as exc:  # a broken plugin is a start-up error, said in one line
            raise ConfigError(f"plugin {ep.name!r} failed to load: {exc}") from exc
        try:
            pm.register(module, name=ep.name)
        except ValueError as exc:  # one module under two entry-point names
            raise ConfigError(f"plugin {ep.name!r} cannot be loaded twice: {exc}") from None
        dist = ep.dist
        loaded.append(LoadedPlugin(ep.name, ep.value, dist.name if dist else None, dist.version if dist else None))
    for plugin in extra_plugins:
        try:
            pm.register(plugin)
        except ValueError as exc:
            raise ConfigError(f"a plugin cannot be registered twice: {exc}") from None
        name = pm.get_name(plugin) or repr(plugin)
        loaded.append(LoadedPlugin(name, getattr(plugin, "__name__", type(plugin).__name__), None, None))
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise ConfigError(f"plugin error: {exc}") from None
    return pm, loaded


def collect(config: Config, extra_plugins: Iterable[Any] = (), *, when_read: bool = False) -> Registry:
    """Load plugins and run each registration hook once: all of them now, or with
    ``when_read`` each the first time the registry's kind is read (the CLI, whose
    commands use few of them: ``relaygate --help`` runs only ``register_commands``)."""
    pm, loaded = build_plugin_manager(config, extra_plugins)
    keyless = frozenset(name for plugin in pm.get_plugins() for name in getattr(plugin, "KEYLESS_CHANNEL_TYPES", ()))
    registry = Registry(loaded, functools.partial(_registered, pm.hook, config), keyless_channel_types=keyless)
    if not when_read:
        registry.collect_all()
    return registry


HOOKS = {
    "protocols": "register_client_protocols",
    "channel_types": "register_channel_types",
    "policies": "register_policies",
    "routes": "register_routes",
    "migrations": "register_migrations",
    "commands": "register_commands",
    "session_readers": "register_session_readers",
    "stores": "register_stores",
    "shared_states": "register_shared_state",
    "observers": "register_observers",
    "serve_setups": "register_serve_setup",
    "settings": "register_settings",
}


def _registered(hook: Any, config: Config, kind: str) -> Any:
    """What the plugins register of ``kind`` (one of :data:`~gateway_core.runtime.registry.KINDS`), through its hook."""
    call = getattr(hook, HOOKS[kind])
    if kind == "channel_types":
        channel_types: dict[str, Any] = {}

        def add_channel_type(channel_type: Any) -> None:
            if channel_type.name in channel_types:
                raise ConfigError(f"channel type {channel_type.name!r} registered twice")
            channel_types[channel_type.name] = channel_type

        call(register=add_channel_type, config=config)
        return channel_types
    if kind == "migrations":
        migrations: list[Migration] = []

        def add_migration(name: str, migrate: Migrate) -> None:
            if any(existing == name for existing, _ in migrations):
                raise ConfigError(f"migration {name!r} registered twice")
            migrations.append((name, migrate))

        call(register=add_migration, config=config)
        return sorted(migrations, key=lambda item: item[0])
    if kind == "stores":
        stores: list[Any] = []

        def add_store(store: Any) -> None:
            clash = [other.name for other in stores if other.name == store.name or set(other.schemes) & set(store.schemes)]
            if clash or (store.default and any(other.default for other in stores)):
                raise ConfigError(f"store {store.name!r} registered twice, or for a URL scheme {', '.join(clash) or 'the default'} already serves")
            stores.append(store)

        call(register=add_store, config=config)
        return stores
    if kind == "shared_states":
        shared: list[Any] = []

        def add_shared_state(state: Any) -> None:
            if any(other.name == state.name for other in shared) or (state.default and any(other.default for other in shared)):
                raise ConfigError(f"shared-state kind {state.name!r} registered twice, or a second default")
            shared.append(state)

        call(register=add_shared_state, config=config)
        return shared
    if kind == "settings":
        settings: dict[tuple[str, str], PluginSetting] = {}

        def add_setting(table: str, key: str, default: Any = None, variable: str | None = None, secret: bool = False) -> None:
            if (table, key) in settings:
                raise ConfigError(f"setting {key!r} of [plugins.{table}] registered twice")
            settings[table, key] = PluginSetting(table, key, default, variable, secret)

        call(register=add_setting, config=config)
        return list(settings.values())
    if kind == "commands":
        commands: list[Command] = []

        def add_command(name: str, help: str, configure: ConfigureCommand, run: RunCommand) -> None:
            commands.append((name, help, configure, run))

        call(register=add_command, config=config)
        return commands
    items: list[Any] = []
    call(register=items.append, config=config)
    if kind == "policies":
        items.sort(key=lambda policy: policy.order)
    return items

