"""``relaygate user add|list`` and ``relaygate wallet topup``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ..admin import Admin, users, wallet
from ..hookspecs import hookimpl
from ..money import format_usd, parse_usd
from ..records import DEFAULT_GROUP
from .kit import CommandContext, no_arguments, split_list


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
    password = None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise ValueError("--password-stdin: no password on stdin")
    user = cli.run(lambda admin: users.create_user(admin, args.name, is_admin=args.admin, password=password, groups=groups))
    role = "admin" if user.is_admin else "user"
    cli.print_record(user, text=f"Created {role} {user.name!r} (id {user.id}) with groups: {', '.join(user.groups)}")
    return 0


def _run_user_list(args: argparse.Namespace, cli: CommandContext) -> int:
    listed = cli.run(users.list_users)
    cli.print_table([entry.user for entry in listed], ["id", "name", "is_admin", "enabled", "balance_micros", "groups"])
    return 0


def _configure_wallet_topup(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("amount", metavar="AMOUNT", help="USD, a decimal like 10 or 2.50")
    parser.add_argument("--note", help="why (kept in the ledger)")


def _run_wallet_topup(args: argparse.Namespace, cli: CommandContext) -> int:
    amount = parse_usd(args.amount)
    if amount <= 0:
        raise ValueError(f"a top-up must be more than zero, got {args.amount!r}")

    async def top_up(admin: Admin) -> tuple[int, int]:
        user = await users.find_user(admin, args.user)
        return user.id, await wallet.topup(admin, user.id, amount, args.note)

    user_id, balance = cli.run(top_up)
    record = {"user": args.user, "user_id": user_id, "amount_micros": amount, "balance_micros": balance}
    text = f"Added {format_usd(amount)} USD to {args.user!r}; balance is now {format_usd(balance)} USD."
    cli.print_record(record, text=text)
    return 0
