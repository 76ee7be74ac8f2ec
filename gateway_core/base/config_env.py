"""Every ``[gateway]`` and ``[retention]`` setting from the environment: ``RELAYGATE_<NAME>``.

One rule for each: the variable is the setting's name in capitals after
``RELAYGATE_`` (``max_attempts`` → ``RELAYGATE_MAX_ATTEMPTS``); a table's keys add
their own (``[gateway.timeouts] connect`` → ``RELAYGATE_TIMEOUTS_CONNECT``,
``[gateway.json] max_depth`` → ``RELAYGATE_JSON_MAX_DEPTH``), and so do
``[retention]``'s (``usage_days`` → ``RELAYGATE_RETENTION_USAGE_DAYS``). Values are read as the
setting's type: ``true``/``false`` (or ``1``/``0``, ``yes``/``no``, ``on``/``off``),
numbers, text, or comma-separated lists. The precedence, documented in
``docs/configuration.md``: a command-line flag, then the environment, then
``plugins.toml``, then the default.

A plugin's own table (``[plugins.NAME]``) is read by the plugin; it declares its keys
(:class:`PluginSetting`, through the ``register_settings`` hook) so that ``relaygate
config show`` can say where each value came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

PREFIX = "RELAYGATE_"
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
LISTS = ("trusted_proxies", "metrics_allow")
TEXTS = ("redis", "replica", "metrics_token", "session_header", "redis_prefix", "server", "budget_timezone", "budget_window")


@attrs.frozen
class PluginSetting:
    """One key of a plugin's table: ``key`` of ``[plugins.<table>]`` (``table``
    ``"console.sso"`` for ``[plugins.console.sso]``), the ``default`` the plugin uses
    when nothing sets it (``None``: unset), the environment ``variable`` that wins over
    the file, if any, and whether the value is a ``secret`` (never shown)."""

    table: str
    key: str
    default: Any = None
    variable: str | None = None
    secret: bool = False


def variable(name: str, key: str | None = None) -> str:
    """The environment variable of the setting ``name`` (of the key ``key`` of a table)."""
    return PREFIX + (name if key is None else f"{name}_{key}").upper()


def from_environment(
    known: Iterable[str], defaults: Any, tables: Mapping[str, Iterable[str]], environ: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``[gateway]`` values the environment sets, in the form ``plugins.toml``
    gives them (tables as dicts), and the variable each came from (a table's keys
    as ``"name.key"``). ``defaults``: a :class:`~gateway_core.config.Config`, whose
    values tell each setting's type; ``tables``: each table's keys."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in known:
        if name in tables:
            for key in tables[name]:
                text = environ.get(variable(name, key))
                if text is not None:
                    default = _table_default(defaults, name, key)
                    values.setdefault(name, {})[key] = _parse(text, default, variable(name, key))
                    sources[f"{name}.{key}"] = variable(name, key)
            continue
        text = environ.get(variable(name))
        if text is None:
            continue
        values[name] = _parse_setting(name, text, defaults)
        sources[name] = variable(name)
    return values, sources


def retention_from_environment(defaults: Any, environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``[retention]`` keys the environment sets (``RELAYGATE_RETENTION_<KEY>``), in the
    form ``plugins.toml`` gives them, and the variable of each (as ``"retention.<key>"``).
    ``defaults``: a :class:`~gateway_core.store.retention.Retention`; a :class:`ValueError`
    names the variable of a value it refuses."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for field in attrs.fields(type(defaults)):
        name = variable("retention", field.name)
        text = environ.get(name)
        if text is None:
            continue
        value = _parse(text, getattr(defaults, field.name), name)
        try:
            type(defaults).from_table({field.name: value})
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        values[field.name] = value
        sources[f"retention.{field.name}"] = name
    return values, sources


def _parse_setting(name: str, text: str, defaults: Any) -> Any:
    if name in LISTS:
        return [item.strip() for item in text.split(",") if item.strip()]
    if name in TEXTS:
        return text.strip()
    return _parse(text, getattr(defaults, name), variable(name))


def _table_default(defaults: Any, name: str, key: str) -> Any:
    table = {"json": "json_limits"}.get(name, name)
    value = getattr(getattr(defaults, table), key, None)
    return "closed" if name == "redis_faults" else value


def _parse(text: str, default: Any, where: str) -> Any:
    """``text`` as a value of ``default``'s type (a :class:`ValueError` naming ``where``)."""
    cleaned = text.strip()
    if isinstance(default, bool):
        if cleaned.lower() in TRUE:
            return True
        if cleaned.lower() in FALSE:
            return False
        raise ValueError(f"{where} must be true or false, got {text!r}")
    if isinstance(default, int):
        try:
            return int(cleaned)
        except ValueError:
            raise ValueError(f"{where} must be a whole number, got {text!r}") from None
    if isinstance(default, float):
        try:
            return float(cleaned)
        except ValueError:
            raise ValueError(f"{where} must be a number, got {text!r}") from None
    return cleaned


def table_keys(defaults: Any) -> dict[str, tuple[str, ...]]:
    """The keys of ``[gateway]``'s tables, from the records that hold them."""
    from ..ratelimit.faults import KINDS

    return {
        "timeouts": tuple(field.name for field in attrs.fields(type(defaults.timeouts))),
        "json": tuple(field.name for field in attrs.fields(type(defaults.json_limits))),
        "redis_faults": tuple(KINDS),
    }
