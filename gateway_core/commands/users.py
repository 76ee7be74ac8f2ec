"""``relaygate user add|list`` and ``relaygate wallet topup``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ..access_records import Credit
from ..admin import Admin, credits, users
from ..hookspecs import hookimpl
from ..jsonable import to_jsonable
from ..money import format_usd, parse_usd
from ..records import DEFAULT_GROUP, UserRecord
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
    async def create(admin: Admin) -> UserRecord:
        user = await users.create_user(admin, args.name, is_admin=args.admin, password=password, groups=groups)
        await cli.audit(admin, "user.create", f"user {user.id}", None, user)
        return user

    user = cli.run(create)
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
    parser.add_argument(
        "--idempotency-key", metavar="K",
        help="the same key again credits nothing and prints the first credit (a retried payment webhook); "
        "a different top-up under the same key exits 1",
    )  # fmt: skip


def _run_wallet_topup(args: argparse.Namespace, cli: CommandContext) -> int:
    amount = parse_usd(args.amount)
    if amount <= 0:
        raise ValueError(f"a top-up must be more than zero, got {args.amount!r}")

    async def top_up(admin: Admin) -> tuple[int, Credit]:
        user = await users.find_user(admin, args.user)
        done = await credits.credit(admin, user.id, amount, kind="topup", note=args.note, idempotency_key=args.idempotency_key)
        if not done.replayed:
            after = await users.get_user(admin, user.id)
            await cli.audit(admin, "wallet.topup", f"user {user.id}", user, {**to_jsonable(after), "credit": to_jsonable(done)})
        return user.id, done

    user_id, done = cli.run(top_up)
    record: dict[str, Any] = {"user": args.user, "user_id": user_id, "amount_micros": amount, "balance_micros": done.balance_after_micros}
    if args.idempotency_key is not None:
        record.update(ledger_id=done.ledger_id, idempotency_key=done.idempotency_key, replayed=done.replayed)
    if done.replayed:
        text = (f"Already credited under idempotency key {done.idempotency_key!r} (ledger row {done.ledger_id}): "
                f"nothing moved now; balance after that credit was {format_usd(done.balance_after_micros)} USD.")  # fmt: skip
    else:
        text = f"Added {format_usd(amount)} USD to {args.user!r}; balance is now {format_usd(done.balance_after_micros)} USD."
    cli.print_record(record, text=text)
    return 0
