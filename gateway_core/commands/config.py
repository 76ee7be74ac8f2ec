"""``relaygate config show``: the effective settings (``[gateway]``'s, ``[retention]``'s,
``serve``'s and the plugins' tables ``[plugins.*]``) and where each came from.

The precedence: a command-line flag, then the environment (``RELAYGATE_<NAME>``,
:mod:`gateway_core.base.config_env`; a plugin's own variables, such as the console's
``RELAYGATE_SSO_*``), then ``plugins.toml``, then the default. A plugin's keys are those
it declares (``register_settings``), set or not, and any other its table has in the file.
Secrets are masked: tokens and declared secrets whole, the password of a URL, and a key
nobody declared whose name says it is one.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import attrs

from ..config import GATEWAY_SETTINGS, HOME_ENV, data_home
from ..hookspecs import hookimpl
from .kit import CommandContext, no_arguments
from .serve import SERVE_ENVIRONMENT

if TYPE_CHECKING:
    from ..base.config_env import PluginSetting
    from ..config import Config

SECRETS = ("metrics_token",)
SECRET_WORDS = ("secret", "token", "password", "passwd", "credential", "private_key", "api_key")  # an undeclared key named so is masked
HIDDEN = "********"
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
    rows.extend(plugin_rows(config, cli.registry.settings, os.environ))
    if cli.json:
        cli.print_record({row["setting"]: {"value": row["value"], "from": row["from"]} for row in rows})
        return 0
    cli.print_table(rows, ["setting", "value", "from"])
    return 0


def plugin_rows(config: Config, declared: Sequence[PluginSetting], environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """A row for each key of the plugins' tables, ``plugins.<table>.<key>``: every key a
    plugin declared, from its variable, the file or its default; then the file's others."""
    places = {(setting.table, setting.key) for setting in declared}
    rows: dict[str, dict[str, Any]] = {}
    for setting in declared:
        found = _in_file(config.plugins, setting.table, setting.key)
        if setting.variable and setting.variable in environ:
            value, source = environ[setting.variable], setting.variable
        elif found:
            value, source = found[0], config.source or "plugins.toml"
        else:
            value, source = setting.default, "default"
        name = f"plugins.{setting.table}.{setting.key}"
        rows[name] = {"setting": name, "value": hidden(plain(value), setting.secret), "from": source}
    for table, key, value in _file_keys(config.plugins, places):
        if (table, key) not in places:
            name = f"plugins.{table}.{key}"
            rows[name] = {"setting": name, "value": hidden(plain(value), any(word in key.lower() for word in SECRET_WORDS)), "from": config.source or "plugins.toml"}
    return [rows[name] for name in sorted(rows)]


def _in_file(tables: Mapping[str, Any], table: str, key: str) -> tuple[Any] | None:
    """``(value,)`` of ``key`` in the file's ``[plugins.<table>]``, or ``None`` when it is not there."""
    place: Any = tables
    for name in table.split("."):
        place = place.get(name) if isinstance(place, Mapping) else None
    return (place[key],) if isinstance(place, Mapping) and key in place else None


def _file_keys(tables: Mapping[str, Any], declared: set[tuple[str, str]], table: str = "") -> Iterator[tuple[str, str, Any]]:
    """Each ``(table, key, value)`` of the file's plugin tables, a sub-table's keys under its
    own name (a declared key holding a table is one value)."""
    for key, value in tables.items():
        if not table:
            if isinstance(value, Mapping):
                yield from _file_keys(value, declared, key)
        elif isinstance(value, Mapping) and (table, key) not in declared:
            yield from _file_keys(value, declared, f"{table}.{key}")
        else:
            yield table, key, value


def hidden(value: Any, secret: bool) -> Any:
    """``value`` as ``config show`` prints it: a secret masked whole, a URL without its password."""
    if value is None:
        return None
    if secret:
        return HIDDEN
    return without_password(value)


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
        return HIDDEN
    if name in URLS:
        return without_password(value)
    return value


def without_password(value: Any) -> Any:
    """A URL with its password masked (anything else as it is)."""
    if isinstance(value, str) and "://" in value:
        parts = urlsplit(value)
        if parts.password:
            host = parts.netloc.rpartition("@")[2]
            return urlunsplit(parts._replace(netloc=f"{parts.username}:{HIDDEN}@{host}"))
    return value
