"""``relaygate new-adapter NAME [--dir DIR]``: a new adapter package from the template."""

from __future__ import annotations

import argparse

from ..hookspecs import RegisterCommand, hookimpl
from .kit import CommandContext


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    register("new-adapter", "create a working, tested adapter package to start from", _configure, _run)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="the channel type's name: lower-case letters, digits, underscores")
    parser.add_argument("--dir", metavar="DIR", help="where to create it (default ./relaygate-NAME)")


def _run(args: argparse.Namespace, cli: CommandContext) -> int:
    from .scaffold import create_adapter

    target = create_adapter(args.name, args.dir or f"relaygate-{args.name.replace('_', '-')}")
    cli.print_record(
        {"name": args.name, "path": str(target), "package": f"relaygate_{args.name}"},
        text=(
            f"Created {target}: the channel type {args.name!r} in the package relaygate_{args.name}.\n"
            f"Next: pip install -e {target} && pytest {target}/tests"
        ),
    )
    return 0
