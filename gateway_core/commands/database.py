"""``relaygate migrate``: bring a database's schema up to date, on either store;
``relaygate copy-store``: move an installation to another (empty) database."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..hookspecs import hookimpl
from .kit import CommandContext, CommandError, no_arguments, run_async


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("migrate", "apply the database's pending migrations (the core's and the plugins')", no_arguments, _run_migrate)
    register("copy-store", "copy every table of one database into a new, empty one (e.g. SQLite to PostgreSQL)", _configure_copy, _run_copy)


def _run_migrate(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..store.request_store import StoreUnavailable

    config = cli.config
    try:
        kind = cli.registry.store_kind(config.db_path)
        store, applied = run_async(kind.migrate(config.db_path, cli.registry.migrations, timeout=config.db_timeout))
    except StoreUnavailable as exc:
        raise CommandError(str(exc)) from None
    if cli.json:
        cli.print_record({"store": store, "applied": applied})
    elif applied:
        for name in applied:
            print(f"applied {name}")
        print(f"{len(applied)} migration(s) applied to {store}")
    else:
        print(f"nothing to apply: the schema of {store} is up to date")
    return 0


def _configure_copy(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="source", required=True, metavar="URL", help="the database to copy: a path, sqlite:///PATH or postgresql://…")
    parser.add_argument("--to", dest="target", required=True, metavar="URL", help="the empty database to fill (migrated first)")


def _run_copy(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..store.request_store import StoreUnavailable

    from ..store.copy import CopyRefused, copy_store

    try:
        done = run_async(copy_store(cli.registry, args.source, args.target, timeout=cli.config.db_timeout))
    except (CopyRefused, StoreUnavailable) as exc:
        raise CommandError(str(exc)) from None
    if cli.json:
        cli.print_record({"source": done.source, "target": done.target, "tables": done.tables, "users": done.audit.users,
                          "keys": done.audit.keys, "ledger_rows": done.audit.ledger_rows, "check": "ok"})  # fmt: skip
        return 0
    width = max(map(len, done.tables), default=0)
    for table, count in done.tables.items():
        print(f"{table.ljust(width)}  {count}")
    print(f"copied {sum(done.tables.values())} rows in {len(done.tables)} tables from {done.source} to {done.target}; "
          f"check ok: {done.audit.users} balances equal their ledger sums, {done.audit.keys} keys' usage equals their charges")  # fmt: skip
    return 0
