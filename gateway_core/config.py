"""Gateway configuration: ``plugins.toml`` and the environment.

``plugins.toml``::

    # entry-point names of the plugins to load; omit to load every installed one
    load = ["acme", "demo", "console"]

    [gateway]                 # settings of the core (all optional)
    trusted_proxies = ["127.0.0.1"]
    max_body_bytes = 33554432

    redis = "redis://127.0.0.1:6379/0"   # state shared by workers and replicas
    metrics_allow = ["10.0.0.0/8"]        # who may read GET /metrics (default: loopback)

    [gateway.redis_faults]    # Redis unreachable: "open" or "closed" per kind
    rate_limits = "closed"

    [retention]               # how long usage rows are kept (gateway_core/store/retention.py)
    usage_days = 90

    [plugins.acme]            # a plugin's own settings
    default_max_tokens = 4096
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from collections.abc import Mapping
from typing import Any

import attrs

from .base.timeouts import Timeouts
from .json_body import DEFAULT_LIMITS, JsonLimits
from .ratelimit.faults import FaultPolicy
from .base.retention import Retention

HOME_ENV = "RELAYGATE_HOME"


def data_home() -> Path:
    """The gateway's data folder: ``RELAYGATE_HOME``, else the user's data folder
    (``~/.local/share/relaygate`` on Linux; ``/var/lib/relaygate`` in the image).
    Never relative to the current folder: a command run from elsewhere finds the
    same database."""
    configured = os.environ.get(HOME_ENV)
    if configured:
        return Path(configured).expanduser().absolute()
    from platformdirs import user_data_path

    return user_data_path("relaygate", appauthor=False)


def default_db() -> str:
    """The database when neither ``--db`` nor ``RELAYGATE_DB`` names one."""
    return str(data_home() / "relaygate.db")


class ConfigError(Exception):
    """A configuration problem, reported as one line at start-up."""


@attrs.frozen
class Config:
    db_path: str = attrs.field(factory=default_db)
    load: tuple[str, ...] | None = None  # None: every installed plugin
    plugins: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    trusted_proxies: tuple[str, ...] = ()
    max_body_bytes: int = 32 * 1024 * 1024
    # seconds from a request's headers to the end of its body (408 past them)
    body_timeout: float = 120.0
    # an upstream's non-streaming answer, and one frame of its stream, at most (502 past them)
    max_answer_bytes: int = 32 * 1024 * 1024
    max_frame_bytes: int = 32 * 1024 * 1024
    # seconds one write of a stream to the client may wait for the client to read (0: no limit)
    write_timeout: float = 60.0
    # seconds a WebSocket of requests (Responses over WebSocket) may sit with no request running or arriving
    websocket_idle_timeout: float = 900.0
    timeouts: Timeouts = Timeouts()
    max_attempts: int = 3
    # failover: every attempt of a request starts within this many seconds of its arrival
    attempt_deadline: float = 300.0
    # seconds between keep-alives while a stream waits for its first byte (0: none)
    keepalive_interval: float = 0.0
    # circuit breakers: consecutive failures that open one, seconds it stays open
    breaker_failures: int = 3
    breaker_cooldown: float = 30.0
    # seconds after a breaker opened (or its last resort was sent) before a request that
    # finds every channel cooling down may try that one anyway (0: never)
    breaker_last_resort: float = 1.0
    # session affinity (gateway_core.routing.affinity): a session's requests go to the channel
    # and key that served it last while healthy; its header, its lifetime after its
    # last request, and how many sessions one process remembers (without Redis)
    session_affinity: bool = False
    session_header: str = "x-session-id"
    session_ttl: float = 600.0
    session_max_entries: int = 100_000
    source: str | None = None
    # billing: the output reserved for a request that names no max tokens; the
    # lease of a process's reservations (renewed every third of it: a dead
    # process's are released once it runs out) and the age after which any
    # reservation is released; the name of this replica in the holds it owns
    default_max_output_tokens: int = 4096
    hold_lease_seconds: float = 60.0
    stale_hold_seconds: float = 900.0
    replica: str | None = None  # None: the host name
    # budgets that reset: calendar windows in this time zone, or rolling windows
    cost_header: bool = False  # every billed non-streamed answer carries x-relaygate-cost-usd
    budget_timezone: str = "UTC"
    budget_window: str = "calendar"
    # seconds a shutdown lets requests and streams finish before cutting them
    shutdown_grace_seconds: float = 30.0
    # the HTTP server: hypercorn (h11) or uvicorn (httptools), see gateway_core/runtime/server.py
    server: str = "hypercorn"
    # serve: each worker process (or the one process) keeps its threads on one CPU of its own (gateway_core/runtime/cpu_pinning.py)
    pin_workers: bool = False
    # PostgreSQL: connections per worker process, and seconds a call waits for a
    # connection and its answer before the store reports itself unavailable
    db_pool_size: int = 10
    db_timeout: float = 5.0
    # SQLite: how long a finished request's settlement is sent again while another
    # process holds the write lock (request/recorder.py); then it fails as before
    locked_retry_seconds: float = 30.0
    # Redis for the state shared by workers and replicas (rate limits, channel
    # caps, breakers, invalidations, sign-in throttling); None: each process keeps
    # it in its own memory. redis_fail_open is the older form of
    # redis_faults.rate_limits = "open".
    redis: str | None = None
    redis_fail_open: bool = False
    redis_prefix: str = "relaygate"  # the start of every key, for gateways that share one Redis
    # GET /metrics: a bearer token it requires and/or the addresses it answers
    # (networks); with neither, only loopback clients may read it
    metrics_token: str | None = attrs.field(default=None, repr=False)
    metrics_allow: tuple[str, ...] = ()
    # seconds between a shutdown signal and the end of accepting requests, while
    # GET /readyz answers 503 so that a load balancer drains the replica
    shutdown_drain_seconds: float = 0.0
    # Redis unreachable while serving: open or closed per kind ([gateway.redis_faults], ratelimit/faults.py)
    redis_faults: FaultPolicy = FaultPolicy()
    # bounds on a client's JSON body ([gateway.json]): depth, string length, items, integers
    json_limits: JsonLimits = DEFAULT_LIMITS
    # the address ``relaygate serve`` listens on (None elsewhere), for plugins that
    # warn at start-up about what it exposes
    serve_host: str | None = None
    # a key asking for a model that exists but that it may not use (its restriction,
    # its group) gets 403 saying so; true: the same 400 "not found or not permitted" as
    # an unknown model, so that a key cannot learn other groups' model names
    hide_forbidden_models: bool = False
    # a model its operator has not priced is charged at the catalogue's list price
    # (gateway_core/billing/catalogue.json); false: it is refused, 403 model_not_priced
    price_catalogue: bool = True
    # [retention]: how long the usage log keeps its rows, and the job that rolls it up and prunes it
    retention: Retention = Retention()
    # where each setting came from ("db", a [gateway] name): a flag, an environment
    # variable, the plugins file; absent: the default (relaygate config show)
    sources: Mapping[str, str] = attrs.field(factory=dict, eq=False, repr=False)

    def plugin_settings(self, name: str) -> dict[str, Any]:
        return self.plugins.get(name, {})


def load_config(
    db_path: str | None = None, plugins_file: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Config:
    """The configuration: ``plugins_file`` (default: ``RELAYGATE_PLUGINS`` or
    ``./plugins.toml`` when it exists) under the environment's ``RELAYGATE_<SETTING>``
    variables (:mod:`gateway_core.base.config_env`), and the database (``db_path``, else
    ``RELAYGATE_DB``, else ``relaygate.db`` in :func:`data_home`). ``sources`` says
    where each setting came from."""
    from .base.config_env import from_environment, retention_from_environment, table_keys

    environ = os.environ if environ is None else environ
    if db_path:
        db, db_source = db_path, "--db"
    elif environ.get("RELAYGATE_DB"):
        db, db_source = environ["RELAYGATE_DB"], "RELAYGATE_DB"
    else:
        db, db_source = default_db(), f"default ({HOME_ENV})" if environ.get(HOME_ENV) else "default"
    data, path = _read_file(plugins_file, environ)
    file_gateway = data.get("gateway", {})
    if not isinstance(file_gateway, dict):
        raise ConfigError(f"{path}: [gateway] and [plugins.NAME] must be tables")
    defaults = Config(db_path=db)
    try:
        from_env, env_sources = from_environment(GATEWAY_SETTINGS, defaults, table_keys(defaults), environ)
        if "redis" in from_env:
            redis_url(from_env["redis"], "RELAYGATE_REDIS")
        retention_env, retention_sources = retention_from_environment(defaults.retention, environ)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    gateway = dict(file_gateway)
    for name, value in from_env.items():
        gateway[name] = {**file_gateway.get(name, {}), **value} if isinstance(value, dict) else value
    file_retention = data.get("retention", {})
    retention = {**file_retention, **retention_env} if isinstance(file_retention, dict) else file_retention
    config = config_from_mapping({**data, "gateway": gateway, "retention": retention}, db_path=db, source=str(path) if path else None)
    sources = {"db": db_source, **{name: str(path) for name in file_gateway if path}}
    sources.update({f"retention.{key}": str(path) for key in file_retention if path})
    sources.update(retention_sources)
    variables: dict[str, list[str]] = {}
    for key, variable_name in env_sources.items():  # a table's keys: "timeouts.connect"
        variables.setdefault(key.partition(".")[0], []).append(variable_name)
    for name, names in variables.items():
        sources[name] = ", ".join(names) + (f" over {path}" if isinstance(file_gateway.get(name), dict) else "")  # a table's other keys
    return attrs.evolve(config, sources=sources)


def _read_file(plugins_file: str | os.PathLike[str] | None, environ: Mapping[str, str]) -> tuple[dict[str, Any], Path | None]:
    """``plugins.toml``'s tables and its path (``{}`` and ``None`` when there is none)."""
    explicit = plugins_file or environ.get("RELAYGATE_PLUGINS")
    path = Path(explicit) if explicit else Path("plugins.toml")
    if not path.exists():
        if explicit:
            raise ConfigError(f"plugins file not found: {path}")
        return {}, None
    import tomllib  # here, when there is a file to read: importing it compiles its parser's expressions

    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), path
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


# every [gateway] setting; each has its environment variable too (gateway_core/runtime/config_env.py)
GATEWAY_SETTINGS = (
    "trusted_proxies", "max_body_bytes", "timeouts", "max_attempts", "default_max_output_tokens", "stale_hold_seconds",
    "attempt_deadline", "keepalive_interval", "breaker_failures", "breaker_cooldown", "breaker_last_resort", "db_pool_size",
    "session_affinity", "session_header", "session_ttl", "session_max_entries", "db_timeout",
    "locked_retry_seconds",
    "redis", "redis_fail_open", "redis_prefix", "metrics_token", "metrics_allow", "shutdown_drain_seconds", "redis_faults",
    "hold_lease_seconds", "replica", "shutdown_grace_seconds", "server", "pin_workers",
    "budget_timezone", "budget_window", "cost_header", "json", "hide_forbidden_models",
    "body_timeout", "max_answer_bytes", "max_frame_bytes", "write_timeout", "price_catalogue",
    "websocket_idle_timeout",
)  # fmt: skip


def config_from_mapping(data: dict[str, Any], *, db_path: str | None = None, source: str | None = None) -> Config:
    where = source or "configuration"
    load = data.get("load")
    if load is not None and (not isinstance(load, list) or not all(isinstance(n, str) for n in load)):
        raise ConfigError(f"{where}: 'load' must be a list of plugin names")
    gateway = data.get("gateway", {})
    plugins = data.get("plugins", {})
    if not isinstance(gateway, dict) or not isinstance(plugins, dict):
        raise ConfigError(f"{where}: [gateway] and [plugins.NAME] must be tables")
    unknown = set(gateway) - set(GATEWAY_SETTINGS) - {"detailed_model_errors"}
    if unknown:
        raise ConfigError(f"{where}: unknown [gateway] setting(s): {', '.join(sorted(unknown))}")
    timeouts = gateway.get("timeouts", {})
    defaults = Config(db_path=db_path or "")
    try:
        return Config(
            db_path=db_path or default_db(),
            load=tuple(load) if load is not None else None,
            plugins={str(k): dict(v) for k, v in plugins.items()},
            trusted_proxies=tuple(gateway.get("trusted_proxies", ())),
            max_body_bytes=int(gateway.get("max_body_bytes", defaults.max_body_bytes)),
            body_timeout=_seconds(gateway, "body_timeout", defaults.body_timeout),
            max_answer_bytes=_positive_int(gateway, "max_answer_bytes", defaults.max_answer_bytes),
            max_frame_bytes=_positive_int(gateway, "max_frame_bytes", defaults.max_frame_bytes),
            write_timeout=_seconds(gateway, "write_timeout", defaults.write_timeout, zero=True),
            websocket_idle_timeout=_seconds(gateway, "websocket_idle_timeout", defaults.websocket_idle_timeout),
            timeouts=Timeouts(**{k: float(v) for k, v in timeouts.items()}),
            max_attempts=_positive_int(gateway, "max_attempts", defaults.max_attempts),
            attempt_deadline=_seconds(gateway, "attempt_deadline", defaults.attempt_deadline),
            keepalive_interval=_seconds(gateway, "keepalive_interval", defaults.keepalive_interval, zero=True),
            breaker_failures=_positive_int(gateway, "breaker_failures", defaults.breaker_failures),
            breaker_cooldown=_seconds(gateway, "breaker_cooldown", defaults.breaker_cooldown),
            breaker_last_resort=_seconds(gateway, "breaker_last_resort", defaults.breaker_last_resort, zero=True),
            session_affinity=_flag(gateway, "session_affinity", defaults.session_affinity),
            session_header=str(gateway.get("session_header", defaults.session_header)).strip().lower(),
            session_ttl=_seconds(gateway, "session_ttl", defaults.session_ttl),
            session_max_entries=_positive_int(gateway, "session_max_entries", defaults.session_max_entries),
            default_max_output_tokens=_positive_int(gateway, "default_max_output_tokens", defaults.default_max_output_tokens),
            stale_hold_seconds=float(gateway.get("stale_hold_seconds", defaults.stale_hold_seconds)),
            hold_lease_seconds=_seconds(gateway, "hold_lease_seconds", defaults.hold_lease_seconds),
            replica=str(gateway["replica"]) if "replica" in gateway else None,
            shutdown_grace_seconds=_seconds(gateway, "shutdown_grace_seconds", defaults.shutdown_grace_seconds),
            server=_choice(gateway, "server", SERVERS, defaults.server),
            pin_workers=_flag(gateway, "pin_workers", defaults.pin_workers),
            cost_header=_flag(gateway, "cost_header", defaults.cost_header),
            budget_timezone=_timezone(gateway.get("budget_timezone", defaults.budget_timezone)),
            budget_window=_choice(gateway, "budget_window", ("calendar", "rolling"), defaults.budget_window),
            db_pool_size=_positive_int(gateway, "db_pool_size", defaults.db_pool_size),
            db_timeout=_seconds(gateway, "db_timeout", defaults.db_timeout),
            locked_retry_seconds=_seconds(gateway, "locked_retry_seconds", defaults.locked_retry_seconds, zero=True),
            redis=redis_url(gateway["redis"], "[gateway] redis") if "redis" in gateway else None,
            redis_fail_open=_flag(gateway, "redis_fail_open", defaults.redis_fail_open),
            redis_prefix=str(gateway.get("redis_prefix", defaults.redis_prefix)),
            metrics_token=_optional_text(gateway, "metrics_token"),
            metrics_allow=_networks(gateway, "metrics_allow"),
            shutdown_drain_seconds=_seconds(gateway, "shutdown_drain_seconds", defaults.shutdown_drain_seconds, zero=True),
            redis_faults=_redis_faults(gateway),
            json_limits=_json_limits(gateway.get("json", {})),
            hide_forbidden_models=_hide_forbidden_models(gateway),
            price_catalogue=_flag(gateway, "price_catalogue", defaults.price_catalogue),
            retention=Retention.from_table(data.get("retention", {})),
            source=source,
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _hide_forbidden_models(gateway: dict[str, Any]) -> bool:
    """``hide_forbidden_models``; an older file's ``detailed_model_errors`` (its opposite,
    whose default was to hide) is honoured when the new name is absent."""
    if "hide_forbidden_models" in gateway or "detailed_model_errors" not in gateway:
        return _flag(gateway, "hide_forbidden_models", False)
    return not _flag(gateway, "detailed_model_errors", False)


SERVERS = ("hypercorn", "uvicorn")  # relaygate serve --server, [gateway] server


def redis_url(value: object, where: str) -> str:
    """``value`` if it is a Redis URL (``redis://``, ``rediss://`` or ``unix://``)."""
    if not isinstance(value, str) or not value.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"{where} must be a Redis URL (redis://HOST:PORT/DB), got {value!r}")
    return value


def _optional_text(table: dict[str, Any], name: str) -> str | None:
    value = table.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"[gateway] {name} must be a non-empty string")
    return value.strip()


def _networks(table: dict[str, Any], name: str) -> tuple[str, ...]:
    """A list of addresses or networks (``127.0.0.1``, ``10.0.0.0/8``, ``::1``)."""
    value = table.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"[gateway] {name} must be a list of addresses or networks")
    for item in value:
        try:
            ipaddress.ip_network(item.strip(), strict=False)
        except ValueError:
            raise ValueError(f"[gateway] {name}: {item!r} is not an address or a network") from None
    return tuple(item.strip() for item in value)


def _redis_faults(gateway: dict[str, Any]) -> FaultPolicy:
    table = gateway.get("redis_faults", {})
    if not isinstance(table, dict):
        raise ValueError("[gateway.redis_faults] must be a table of kind = \"open\" | \"closed\"")
    return FaultPolicy.parse(table, fail_open=_flag(gateway, "redis_fail_open", False))


def _timezone(value: object) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(str(value))
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"[gateway] budget_timezone must be a time zone name like 'UTC' or 'Europe/Paris', got {value!r}") from None
    return str(value)


def _choice(table: dict[str, Any], name: str, choices: tuple[str, ...], default: str) -> str:
    value = table.get(name, default)
    if value not in choices:
        raise ValueError(f"[gateway] {name} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _json_limits(table: object) -> JsonLimits:
    if not isinstance(table, dict):
        raise ValueError("[gateway.json] must be a table")
    unknown = set(table) - {field.name for field in attrs.fields(JsonLimits)}
    if unknown:
        raise ValueError(f"unknown [gateway.json] setting(s): {', '.join(sorted(unknown))}")
    return JsonLimits(**table)


def _flag(table: dict[str, Any], name: str, default: bool) -> bool:
    value = table.get(name, default)
    if not isinstance(value, bool):
        raise ValueError(f"[gateway] {name} must be true or false, got {value!r}")
    return value


def _positive_int(table: dict[str, Any], name: str, default: int) -> int:
    value = table.get(name, default)
    if type(value) is not int or value <= 0:
        raise ValueError(f"[gateway] {name} must be a positive integer, got {value!r}")
    return value


def _seconds(table: dict[str, Any], name: str, default: float, *, zero: bool = False) -> float:
    value = table.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not zero):
        bound = "0 or more" if zero else "more than 0"
        raise ValueError(f"[gateway] {name} must be a number of seconds, {bound}, got {value!r}")
    return float(value)
