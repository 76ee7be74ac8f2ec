"""The console's plugin: its pages under ``/console`` and its own tables.

Registered through the ``relaygate`` entry point ``console``; a gateway runs
without it when ``plugins.toml`` leaves it out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway_core import hookimpl

from .migrations import MIGRATION_NAME, migrate_console


@hookimpl
def register_routes(register: Callable[[Any], None], config: Any) -> None:
    from .app import console_mount

    register(console_mount(config.plugin_settings("console")))


@hookimpl
def register_migrations(register: Callable[[str, Callable[[Any], None]], None]) -> None:
    register(MIGRATION_NAME, migrate_console)


@hookimpl
def register_session_readers(register: Callable[[Any], None]) -> None:
    from .api_session import ConsoleSessionReader

    register(ConsoleSessionReader())
