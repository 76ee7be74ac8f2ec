"""The console's plugin: its pages under ``/console`` and its own tables.

Registered through the ``relaygate`` entry point ``console``; a gateway runs
without it when ``plugins.toml`` leaves it out.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from gateway_core import hookimpl

from .migrations import MIGRATION_NAME, migrate_console


@hookimpl
def register_routes(register: Callable[[Any], None], config: Any) -> None:
    from .app import console_mount, favicon_route

    settings = config.plugin_settings("console")
    host = getattr(config, "serve_host", None)
    if host is not None and not is_loopback(host) and not settings.get("secure_cookies"):
        import structlog  # here: every relaygate command loads this plugin, few build its routes

        structlog.get_logger("relaygate.console").warning(
            "console served on a non-loopback address without secure_cookies",
            host=host,
            advice="serve it only behind TLS and set [plugins.console] secure_cookies = true (docs/configuration.md)",
        )
    register(console_mount(settings))
    register(favicon_route())


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to any address


@hookimpl
def register_migrations(register: Callable[[str, Callable[[Any], None]], None]) -> None:
    register(MIGRATION_NAME, migrate_console)


@hookimpl
def register_session_readers(register: Callable[[Any], None]) -> None:
    from .api_session import ConsoleSessionReader

    register(ConsoleSessionReader())


@hookimpl
def register_settings(register: Callable[..., None]) -> None:
    from .plugin_settings import declare  # here: only relaygate config show asks

    declare(register)
