"""``relaygate migrate``: bring a database's schema up to date, on either store."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..hookspecs import hookimpl
from ..request_store import StoreUnavailable
from .kit import CommandContext, CommandError, no_arguments, run_async


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("migrate", "apply the database's pending migrations (the core's and the plugins')", no_arguments, _run_migrate)


def _run_migrate(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..store.maintenance import migrate_database

    config = cli.config
    try:
        store, applied = run_async(migrate_database(config.db_path, cli.registry.migrations, timeout=config.db_timeout))
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
