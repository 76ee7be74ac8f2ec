"""``relaygate fallback set|remove|list``: model fallbacks of groups and keys."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..hookspecs import hookimpl
from .kit import CommandContext, no_arguments


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("fallback set", "serve MODEL with FALLBACK when every channel of MODEL fails (for a group or a key)", _configure_set, _run_set)
    register("fallback remove", "remove a model fallback of a group or a key", _configure_remove, _run_remove)
    register("fallback list", "list model fallbacks", no_arguments, _run_list)


def _add_owner(parser: argparse.ArgumentParser) -> None:
    owner = parser.add_mutually_exclusive_group(required=True)
    owner.add_argument("--group", metavar="GROUP", help="for every key of this group")
    owner.add_argument("--key", type=int, metavar="KEY_ID", help="for this key only (wins over its group's)")


def _configure_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL")
    parser.add_argument("fallback", metavar="FALLBACK")
    _add_owner(parser)


def _run_set(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import fallbacks

    record = cli.run(lambda admin: fallbacks.set_fallback(admin, args.model, args.fallback, group=args.group, key_id=args.key))
    owner = f"group {record.owner!r}" if record.scope == fallbacks.GROUP else f"key {record.owner}"
    cli.print_record(record, text=f"{record.model} -> {record.fallback} for {owner} (when every channel of {record.model} fails).")
    return 0


def _configure_remove(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL")
    _add_owner(parser)


def _run_remove(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import fallbacks

    cli.run(lambda admin: fallbacks.remove_fallback(admin, args.model, group=args.group, key_id=args.key))
    cli.print_record({"removed": args.model}, text=f"Removed the fallback of {args.model}.")
    return 0


def _run_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import fallbacks

    cli.print_table(cli.run(fallbacks.list_fallbacks), ["scope", "owner", "model", "fallback"])
    return 0
