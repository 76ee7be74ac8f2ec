"""``relaygate plugins``: what was loaded, with versions."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..hookspecs import hookimpl

from .kit import CommandContext, no_arguments


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("plugins", "list the loaded plugins", no_arguments, _run_plugins)


def _run_plugins(args: argparse.Namespace, cli: CommandContext) -> int:
    cli.print_table(cli.registry.plugins, ["name", "module", "distribution", "version"])
    return 0
