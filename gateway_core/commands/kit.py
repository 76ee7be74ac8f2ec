"""The helper kit for ``relaygate`` sub-commands, the core's and plugins' alike.

A command is ``register(name, help, configure, run)`` from the
``register_commands`` hook: ``configure(parser)`` adds its arguments and
``run(args, cli)`` gets the parsed arguments and a :class:`CommandContext`.
Raise :class:`CommandError` for a failure said in one line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..base.lazy import MappingWhenRead
from ..money import format_usd

if TYPE_CHECKING:
    from ..store.access_records import Actor
    from ..admin import Admin
    from ..base.config_env import PluginSetting
    from ..channel_type import ChannelType
    from ..config import Config
    from ..runtime.entry_points import LoadedPlugin
    from ..shared_state import SharedStateKind
    from ..sql import Migration
    from ..stores import StoreKind


# What a command does is imported when it runs, here as in every command's module:
# ``relaygate --help`` loads each command's module, and should load nothing more.

T = TypeVar("T")

PROG = "relaygate"
CREATES_DATABASE = frozenset({"init", "serve", "migrate"})  # every other command refuses a database file that does not exist
EXIT_ERROR = 1  # a record is missing, an operation failed
EXIT_USAGE = 2  # a bad argument or configuration


class CommandError(Exception):
    """A command's failure, said in one line; ``status`` is the exit status."""

    def __init__(self, message: str, status: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.status = status


class UsageError(CommandError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with errors as one line raised (not printed with the usage)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


class CommandRegistry(Protocol):
    """What the plugins registered, as a command reads it (the runtime's ``Registry``,
    which names this module's hook types: it is named here by this Protocol)."""

    @property
    def plugins(self) -> Sequence[LoadedPlugin]: ...

    @property
    def channel_types(self) -> Mapping[str, ChannelType]: ...

    @property
    def keyless_channel_types(self) -> frozenset[str]: ...

    @property
    def migrations(self) -> Sequence[Migration]: ...

    @property
    def serve_setups(self) -> Sequence[Callable[[int, dict[str, str]], None]]:
        """``gateway_core.hookspecs.ServeSetup``: run by ``relaygate serve`` before it serves."""

    @property
    def settings(self) -> Sequence[PluginSetting]:
        """The keys of the plugins' tables they declared (``register_settings``)."""

    def store_kind(self, url: str) -> StoreKind: ...

    def shared_state_kind(self, config: Config) -> SharedStateKind: ...


class CommandContext:
    """What a command's ``run(args, cli)`` gets: configuration, plugins, the
    admin layer on the database and output helpers honouring ``--json``."""

    def __init__(self, args: argparse.Namespace, config: Config, registry: CommandRegistry) -> None:
        self.args = args
        self.config = config
        self.registry = registry
        from ..store.sealing import default_key_file, use_key_file

        use_key_file(default_key_file(config.db_path))  # relaygate init's secret key, when no RELAYGATE_SECRET_KEY is set

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    def run(self, operation: Callable[[Admin], Awaitable[T]]) -> T:
        """Run ``operation(admin)`` (admin operations of :mod:`gateway_core.admin`)
        on the migrated database of ``--db``, opened for it and closed after.

        Running gateways are other processes: with Redis configured (``[gateway]
        redis``, ``RELAYGATE_REDIS``) the change is published to them before the
        command ends; without it they see it within their caches' lifetime (a
        second). Called where an event loop already runs (``main()`` from async
        code), it runs on a thread of its own."""
        return run_async(self._run(operation))

    async def _run(self, operation: Callable[[Admin], Awaitable[T]]) -> T:
        from ..admin import Admin, Caches
        from ..admin.context import catalogue_of

        config = self.config
        command = getattr(self.args, "_command", ("", None))[0]
        kind = self.registry.store_kind(config.db_path)
        missing = None if command in CREATES_DATABASE else kind.missing(config.db_path)
        if missing is not None:
            raise CommandError(f"{missing}: create one with 'relaygate init', or point --db, RELAYGATE_DB or RELAYGATE_HOME at yours")
        # the channel types and the catalogue when an operation reads them (few do): no adapter imported otherwise
        channel_types = MappingWhenRead(lambda: self.registry.channel_types)
        catalogue = MappingWhenRead(lambda: catalogue_of(config.price_catalogue))
        async with kind.admin(config.db_path, self.registry.migrations, pool_size=config.db_pool_size, timeout=config.db_timeout) as port:
            async with self.registry.shared_state_kind(config).publisher(config) as publish:
                return await operation(Admin(port, channel_types, Caches(publish=publish), catalogue, self.registry.keyless_channel_types))

    async def audit(self, admin: Admin, action: str, target: str, before: Any = None, after: Any = None) -> None:
        """Record a write made by this command in the audit log, as :func:`cli_actor`
        (``before`` and ``after``: the record, or its JSON value; ``None``: none)."""
        from ..admin import audit

        await audit.record(admin, cli_actor(), action, target, before, after)

    def print_record(self, obj: Any, *, text: str | None = None) -> None:
        """Print one record: JSON on one line with ``--json``, else ``text`` if
        given, else one ``field: value`` line per field."""
        from ..runtime.jsonable import to_jsonable

        if self.json:
            print(json.dumps(to_jsonable(obj), ensure_ascii=False))
        elif text is not None:
            print(text)
        else:
            fields = to_jsonable(obj)
            if not isinstance(fields, dict):
                print(fields)
                return
            width = max((len(name) for name in fields), default=0)
            for name, value in fields.items():
                print(f"{name.ljust(width)}  {display(name, value)}")

    def print_table(self, rows: Sequence[Any], columns: Sequence[str]) -> None:
        """Print records: a JSON array with ``--json``, else aligned columns (only
        the columns named are read: no JSON converter, which costs a list command
        a tenth of its start-up)."""
        if self.json:
            from ..runtime.jsonable import to_jsonable

            print(json.dumps([to_jsonable(row) for row in rows], ensure_ascii=False))
            return
        if not rows:
            print("(none)")
            return
        cells = [[display(col, _cell(row, col), unit=False) for col in columns] for row in rows]
        kept = [i for i, col in enumerate(columns) if not _price_part(col) or any(row[i] != "-" for row in cells)]
        cells = [[row[i] for i in kept] for row in cells]  # a kind of price no row has is not a column
        headers = [heading(columns[i]) for i in kept]
        widths = [max(len(col), *(len(row[i]) for row in cells)) for i, col in enumerate(headers)]
        print("  ".join(col.ljust(w) for col, w in zip(headers, widths)).rstrip())
        for row in cells:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def _cell(row: Any, column: str) -> Any:
    """One column of a table's row (a record or a dict) as its JSON value has it:
    a sequence as a list, a record as its fields."""
    import attrs

    value: Any = row.get(column) if isinstance(row, dict) else getattr(row, column, None)
    if isinstance(value, (tuple, list)):
        return [attrs.asdict(item) if attrs.has(type(item)) else item for item in value]
    return attrs.asdict(value) if attrs.has(type(value)) else value


def cli_actor() -> Actor:
    """The command line as the audit log names it: via ``cli``, by the operating
    system's user running it (``cli`` when that cannot be told)."""
    import getpass

    from ..store.access_records import Actor

    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = "cli"
    return Actor("cli", None, name or "cli")


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end: on a new event loop, or on a thread of its
    own where a loop already runs (``main()`` called from async code)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="relaygate-cli") as thread:
        return thread.submit(asyncio.run, coroutine).result()


# --- output -------------------------------------------------------------------


def _price_part(column: str) -> bool:
    return column.startswith("tier_") or (column.endswith("_micros") or column.endswith("_micros_per_mtok")) and "per_" in column


def heading(name: str) -> str:
    """A table's column name for people: ``quota_micros`` holds USD, so it reads
    ``quota_usd`` (``input_usd_per_mtok``); ``--json`` keeps the field names."""
    if name.endswith("_micros_per_mtok"):
        return name.removesuffix("_micros_per_mtok") + "_usd_per_mtok"
    if name.endswith("_micros"):
        return name.removesuffix("_micros") + "_usd"
    return name


def display(name: str, value: Any, *, unit: bool = True) -> str:
    """A value for people: money in USD (the unit said unless a table's heading
    says it), times in UTC, durations in ms to two places, lists joined."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and name.endswith("_micros_per_mtok"):
        return format_usd(value) + (" USD/Mtok" if unit else "")
    if isinstance(value, int) and name.endswith("_micros"):
        return format_usd(value) + (" USD" if unit else "")
    if isinstance(value, (int, float)) and name.endswith("_at"):
        return dt.datetime.fromtimestamp(value, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    if isinstance(value, float) and name.endswith("_ms"):
        return f"{value:.2f}"  # a duration, to the hundredth of a millisecond (--json keeps every digit)
    if isinstance(value, list):
        return ",".join(display(name, v, unit=unit) for v in value) or "-"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "-"
    return str(value)


# --- argument helpers for commands (plugins' too) ---------------------------------------


def split_list(text: str) -> list[str]:
    """``"a, b,,c"`` → ``["a", "b", "c"]``."""
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_model_map(text: str) -> dict[str, str]:
    """``"chat=chat-2026-01-01,fast=chat-mini"`` → a client-to-upstream model map."""
    mapping: dict[str, str] = {}
    for pair in split_list(text):
        client, sep, upstream = pair.partition("=")
        if not sep or not client.strip() or not upstream.strip():
            raise ValueError(f"--model-map entries look like client=upstream, got {pair!r}")
        mapping[client.strip()] = upstream.strip()
    return mapping


def parse_expires(text: str) -> float:
    """An ISO 8601 date or time (UTC when it has no offset) in the future, as Unix seconds."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--expires must be an ISO 8601 date or time like 2026-12-31T18:00:00Z, got {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    expires_at = when.timestamp()
    if expires_at <= time.time():
        raise ValueError(f"--expires {text!r} is in the past")
    return expires_at


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """``configure`` for a command that takes no arguments of its own."""
