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
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

import attrs

from ..config import Config
from ..money import format_usd
from ..records import ChannelRecord, UserRecord, mask_secret

PROG = "relaygate"
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


class CommandContext:
    """What a command's ``run(args, cli)`` gets: configuration, plugins, the
    database and output helpers honouring ``--json``."""

    def __init__(self, args: argparse.Namespace, config: Config, registry: Any) -> None:
        self.args = args
        self.config = config
        self.registry = registry
        self._store: Any = None
        self._migrated = False
        self._connections: list[sqlite3.Connection] = []

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def store(self) -> Any:
        """A :class:`gateway_core.store.Store` on ``--db`` (not started)."""
        if self._store is None:
            from ..store import Store

            self._store = Store(self.config.db_path, self.registry.migrations)
        return self._store

    def connect(self) -> sqlite3.Connection:
        """A connection to the migrated database (closed when the command ends)."""
        if not self._migrated:
            self.store.migrate()
            self._migrated = True
        conn = self.store.connect()
        self._connections.append(conn)
        return conn

    def close(self) -> None:
        for conn in self._connections:
            conn.close()
        self._connections.clear()

    def print_record(self, obj: Any, *, text: str | None = None) -> None:
        """Print one record: JSON on one line with ``--json``, else ``text`` if
        given, else one ``field: value`` line per field."""
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
        """Print records: a JSON array with ``--json``, else aligned columns."""
        items = [to_jsonable(row) for row in rows]
        if self.json:
            print(json.dumps(items, ensure_ascii=False))
            return
        if not items:
            print("(none)")
            return
        cells = [[display(col, item.get(col)) for col in columns] for item in items]
        widths = [max(len(col), *(len(row[i]) for row in cells)) for i, col in enumerate(columns)]
        print("  ".join(col.ljust(w) for col, w in zip(columns, widths)).rstrip())
        for row in cells:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


# --- output -------------------------------------------------------------------


def to_jsonable(obj: Any) -> Any:
    """Records as JSON values; upstream secrets masked."""
    if isinstance(obj, ChannelRecord):
        data = attrs.asdict(obj, recurse=False)
        data["api_keys"] = list(obj.masked_keys())
        data["headers"] = {name: mask_secret(value) for name, value in obj.headers.items()}
        data["disabled_keys"] = [{"index": d.index, "reason": d.reason, "at": d.at} for d in obj.disabled_keys]
        return to_jsonable(data)
    if attrs.has(type(obj)):
        return to_jsonable(attrs.asdict(obj, recurse=False))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


def display(name: str, value: Any) -> str:
    """A value for people: money in USD, times in UTC, lists joined."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and name.endswith("_micros_per_mtok"):
        return f"{format_usd(value)} USD/Mtok"
    if isinstance(value, int) and name.endswith("_micros"):
        return f"{format_usd(value)} USD"
    if isinstance(value, (int, float)) and name.endswith("_at"):
        return dt.datetime.fromtimestamp(value, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    if isinstance(value, list):
        return ",".join(display(name, v) for v in value) or "-"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "-"
    return str(value)


def describe_integrity_error(exc: sqlite3.IntegrityError) -> str:
    """``UNIQUE constraint failed: users.name`` → ``a users record with this name already exists``."""
    message = str(exc)
    prefix = "UNIQUE constraint failed: "
    if message.startswith(prefix):
        table, _, column = message[len(prefix) :].split(",")[0].strip().partition(".")
        return f"a {table} record with this {column or 'key'} already exists"
    if "FOREIGN KEY" in message:
        return "it refers to a record that does not exist"
    return message


# --- argument helpers for commands (plugins' too) ---------------------------------------


def require_user(conn: sqlite3.Connection, name: str) -> UserRecord:
    """The user named ``name``; ``LookupError`` (exit status 1) when there is none."""
    from ..store.users import get_user

    user = get_user(conn, name)
    if user is None:
        raise LookupError(f"no user named {name!r}")
    return user


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
