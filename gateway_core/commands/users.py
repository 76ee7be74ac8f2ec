"""``relaygate user add|list`` and ``relaygate wallet topup``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..hookspecs import hookimpl
import sys

from ..money import format_usd, parse_usd
from ..secrets import hash_password
from ..store import users, wallet
from ..store.migrations import DEFAULT_GROUP
from .kit import CommandContext, CommandError, no_arguments, require_user, split_list


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("user add", "create a user", _configure_user_add, _run_user_add)
    register("user list", "list users", no_arguments, _run_user_list)
    register("wallet topup", "credit a user's balance", _configure_wallet_topup, _run_wallet_topup)


def _configure_user_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--admin", action="store_true", help="an operator of the gateway")
    parser.add_argument("--password-stdin", action="store_true", help="read a console password from stdin")
    parser.add_argument("--groups", default=DEFAULT_GROUP, metavar="G1,G2", help="groups opened to the user")


def _run_user_add(args: argparse.Namespace, cli: CommandContext) -> int:
    groups = split_list(args.groups)
    if not groups:
        raise ValueError("--groups needs at least one group")
    password_hash = None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise ValueError("--password-stdin: no password on stdin")
        password_hash = hash_password(password)
    conn = cli.connect()
    if users.get_user(conn, args.name) is not None:
        raise CommandError(f"user {args.name!r} already exists")
    users.add_user(conn, args.name, is_admin=args.admin, password_hash=password_hash, groups=groups)
    user = users.get_user(conn, args.name)
    role = "admin" if user.is_admin else "user"
    cli.print_record(user, text=f"Created {role} {user.name!r} (id {user.id}) with groups: {', '.join(user.groups)}")
    return 0


def _run_user_list(args: argparse.Namespace, cli: CommandContext) -> int:
    cli.print_table(users.list_users(cli.connect()), ["id", "name", "is_admin", "enabled", "balance_micros", "groups"])
    return 0


def _configure_wallet_topup(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("amount", metavar="AMOUNT", help="USD, a decimal like 10 or 2.50")
    parser.add_argument("--note", help="why (kept in the ledger)")


def _run_wallet_topup(args: argparse.Namespace, cli: CommandContext) -> int:
    amount = parse_usd(args.amount)
    if amount <= 0:
        raise ValueError(f"a top-up must be more than zero, got {args.amount!r}")
    conn = cli.connect()
    user = require_user(conn, args.user)
    balance = wallet.topup(conn, user.id, amount, args.note)
    record = {"user": user.name, "user_id": user.id, "amount_micros": amount, "balance_micros": balance}
    text = f"Added {format_usd(amount)} USD to {user.name!r}; balance is now {format_usd(balance)} USD."
    cli.print_record(record, text=text)
    return 0
