"""What the loaded plugins registered: the objects the request path and the CLI use."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..config import Config, ConfigError
from ..base.config_env import PluginSetting
from ..sql import Migration
from .entry_points import LoadedPlugin

if TYPE_CHECKING:
    from ..hookspecs import ConfigureCommand, RunCommand, ServeSetup
    from ..channel_type import ChannelType
    from ..client_protocol import ClientProtocol
    from ..policy import Policy
    from ..store.request_store import RequestStore
    from ..observers import MakeObserver
    from ..shared_state import SharedStateKind
    from ..stores import StoreKind

Command = tuple[str, str, "ConfigureCommand", "RunCommand"]

# What plugins register, each through its own hook, in the order an app collects them.
KINDS = ("protocols", "channel_types", "policies", "routes", "migrations", "commands", "session_readers", "stores", "shared_states", "observers", "serve_setups",
         "settings")


class Registry:
    """What the loaded plugins registered, in registration order.

    Each kind (:data:`KINDS`) is collected from its hook the first time it is
    read, through ``collect(kind)``: an app reads every kind at start-up
    (:meth:`collect_all`); a ``relaygate`` command reads the commands and then
    only what it uses, so a plugin's hook, and what it imports, runs only when
    needed. Without ``collect`` every kind is empty.
    """

    def __init__(
        self, plugins: list[LoadedPlugin] | None = None, collect: Callable[[str], Any] | None = None, *, keyless_channel_types: frozenset[str] = frozenset()
    ) -> None:
        self.plugins: list[LoadedPlugin] = plugins if plugins is not None else []
        # the channel types their plugins declare keyless (``KEYLESS_CHANNEL_TYPES``), known without reading the types
        self.keyless_channel_types = keyless_channel_types
        self._collect = collect
        self._kinds: dict[str, Any] = {}

    def _kind(self, kind: str, empty: Callable[[], Any]) -> Any:
        if kind not in self._kinds:
            self._kinds[kind] = empty() if self._collect is None else self._collect(kind)
        return self._kinds[kind]

    def collect_all(self) -> None:
        """Run every registration hook now (an app, so a plugin's mistake stops it at start-up)."""
        for kind in KINDS:
            getattr(self, kind)

    @property
    def protocols(self) -> list[ClientProtocol]:
        return self._kind("protocols", list)

    @property
    def channel_types(self) -> dict[str, ChannelType]:
        return self._kind("channel_types", dict)

    @property
    def policies(self) -> list[Policy]:
        return self._kind("policies", list)

    @property
    def routes(self) -> list[Any]:
        return self._kind("routes", list)

    @property
    def migrations(self) -> list[Migration]:
        return self._kind("migrations", list)

    @property
    def commands(self) -> list[Command]:
        return self._kind("commands", list)

    @property
    def session_readers(self) -> list[Any]:  # gateway_core.sign_in.SessionReader
        return self._kind("session_readers", list)

    @property
    def stores(self) -> list[StoreKind]:  # gateway_core.stores: kinds of database, by URL scheme
        return self._kind("stores", list)

    @property
    def shared_states(self) -> list[SharedStateKind]:  # gateway_core.shared_state: in-process, Redis
        return self._kind("shared_states", list)

    @property
    def observers(self) -> list[MakeObserver]:  # gateway_core.observers: metrics, tracing
        return self._kind("observers", list)

    @property
    def serve_setups(self) -> list[ServeSetup]:  # run by `relaygate serve` before it serves (the metrics' worker folder)
        return self._kind("serve_setups", list)

    @property
    def settings(self) -> list[PluginSetting]:  # the keys of the plugins' tables, for `relaygate config show`
        return self._kind("settings", list)

    def shared_state_kind(self, config: Config) -> SharedStateKind:
        """Where ``config`` asks the state to be shared (the in-process default when nowhere)."""
        from ..shared_state import kind_for_config

        return kind_for_config(self.shared_states, config)

    def store_kind(self, url: str) -> StoreKind:
        """The kind of database ``url`` names (a ``ConfigError`` when none is installed)."""
        from ..stores import kind_for

        return kind_for(self.stores, url)

    def kind_of_store(self, store: RequestStore) -> StoreKind:
        """The kind that opened ``store`` (a test's wrapper is taken for the default kind's)."""
        from ..stores import kind_of

        return kind_of(self.stores, store)

    def channel_type(self, name: str) -> ChannelType:
        try:
            return self.channel_types[name]
        except KeyError:
            known = ", ".join(sorted(self.channel_types)) or "none loaded"
            raise ConfigError(f"unknown channel type {name!r} (available: {known})") from None
