"""``relaygate config show``: the effective settings (``[gateway]``'s, ``[retention]``'s
and ``serve``'s) and where each came from.

The precedence: a command-line flag, then the environment (``RELAYGATE_<NAME>``,
:mod:`gateway_core.base.config_env`), then ``plugins.toml``, then the default. Secrets
are masked: tokens whole, the password of a URL.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs

from ..config import GATEWAY_SETTINGS, HOME_ENV, data_home
from ..hookspecs import hookimpl
from .kit import CommandContext, no_arguments
from .serve import SERVE_ENVIRONMENT

SECRETS = ("metrics_token",)
URLS = ("db", "redis")
FIELDS = {"json": "json_limits"}


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("config show", "print the effective settings and where each came from (secrets masked)", no_arguments, _run_show)


def _run_show(args: argparse.Namespace, cli: CommandContext) -> int:
    config, sources = cli.config, cli.config.sources
    rows: list[dict[str, Any]] = [
        {"setting": "home", "value": str(data_home()), "from": HOME_ENV if os.environ.get(HOME_ENV) else "default"},
        {"setting": "db", "value": masked("db", config.db_path), "from": sources.get("db", "default")},
        {"setting": "plugins", "value": config.source, "from": "RELAYGATE_PLUGINS" if os.environ.get("RELAYGATE_PLUGINS") else "default"},
    ]
    for name, (variable, fallback) in SERVE_ENVIRONMENT.items():
        rows.append({"setting": f"serve --{name}", "value": os.environ.get(variable, fallback), "from": variable if variable in os.environ else "default"})
    for name in GATEWAY_SETTINGS:
        value = getattr(config, FIELDS.get(name, name))
        rows.append({"setting": name, "value": masked(name, plain(value)), "from": sources.get(name, "default")})
    for field in attrs.fields(type(config.retention)):  # [retention]: one row a key
        key = f"retention.{field.name}"
        rows.append({"setting": key, "value": getattr(config.retention, field.name), "from": sources.get(key, "default")})
    if cli.json:
        cli.print_record({row["setting"]: {"value": row["value"], "from": row["from"]} for row in rows})
        return 0
    cli.print_table(rows, ["setting", "value", "from"])
    return 0


def plain(value: Any) -> Any:
    """A setting's value as text shows it: records as their fields, tuples as lists."""
    if attrs.has(type(value)):
        return ",".join(f"{key}={item}" for key, item in attrs.asdict(value).items())
    if isinstance(value, tuple):
        return list(value)
    return value


def masked(name: str, value: Any) -> Any:
    """``value`` with its secret hidden: a token whole, a URL's password."""
    if value is None:
        return None
    if name in SECRETS:
        return "********"
    if name in URLS and isinstance(value, str) and "://" in value:
        parts = urlsplit(value)
        if parts.password:
            host = parts.netloc.rpartition("@")[2]
            return urlunsplit(parts._replace(netloc=f"{parts.username}:********@{host}"))
    return value
