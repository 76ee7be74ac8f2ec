"""``relaygate user add|list|edit|password|enable|disable|delete``, ``relaygate user
pending|approve|reject`` (self sign-ups waiting for approval: docs/teams.md#self-sign-up)
and ``relaygate wallet topup``.

A lost admin password is set again on the machine that holds the database:
``relaygate user password admin`` (``--password-stdin`` for scripts).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..hookspecs import hookimpl
from ..money import format_usd, parse_usd
from ..records import DEFAULT_GROUP, UserRecord
from .kit import CommandContext, no_arguments, split_list

if TYPE_CHECKING:
    from ..store.access_records import Credit
    from ..admin import Admin


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("user add", "create a user", _configure_user_add, _run_user_add)
    register("user list", "list users", _configure_user_list, _run_user_list)
    register("user edit", "change a user's groups or admin role", _configure_user_edit, _run_user_edit)
    register("user password", "set a user's console password (also how to recover a lost admin password)", _configure_user_password, _run_user_password)
    register("user enable", "enable a user", _configure_user_name, _run_user_enable)
    register("user disable", "disable a user: their keys, tokens and console sessions stop working", _configure_user_name, _run_user_disable)
    register("user delete", "delete a user for good (keys deleted, tokens revoked; balance, ledger and logs kept)", _configure_user_delete, _run_user_delete)
    register("user pending", "list the single sign-on sign-ups waiting for approval", _configure_user_pending, _run_user_pending)
    register("user approve", "approve a sign-up: the user is made, in its default group, team and role", _configure_user_name, _run_user_approve)
    register("user reject", "reject a sign-up: that person's single sign-on is refused", _configure_user_name, _run_user_reject)
    register("wallet topup", "credit a user's balance", _configure_wallet_topup, _run_wallet_topup)


def _configure_user_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--admin", action="store_true", help="an operator of the gateway")
    parser.add_argument("--password-stdin", action="store_true", help="read a console password from stdin")
    parser.add_argument("--groups", default=DEFAULT_GROUP, metavar="G1,G2", help="groups opened to the user")


def _run_user_add(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import users

    groups = split_list(args.groups)
    if not groups:
        raise ValueError("--groups needs at least one group")
    password = read_password(True) if args.password_stdin else None

    async def create(admin: Admin) -> UserRecord:
        user = await users.create_user(admin, args.name, is_admin=args.admin, password=password, groups=groups)
        await cli.audit(admin, "user.create", f"user {user.id}", None, user)
        return user

    user = cli.run(create)
    role = "admin" if user.is_admin else "user"
    cli.print_record(user, text=f"Created {role} {user.name!r} (id {user.id}) with groups: {', '.join(user.groups)}")
    return 0


def _configure_user_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--deleted", action="store_true", help="deleted users too")


def _run_user_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import users

    listed = cli.run(lambda admin: users.list_users(admin, include_deleted=args.deleted))
    columns = ["id", "name", "is_admin", "enabled", "balance_micros", "groups"] + (["deleted"] if args.deleted else [])
    cli.print_table([entry.user for entry in listed], columns)
    return 0


def _configure_user_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")


def _configure_user_edit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("--groups", metavar="G1,G2", help="exactly these groups, in this order of preference")
    parser.add_argument("--open", metavar="G1,G2", help="open these groups too")
    parser.add_argument("--close", metavar="G1,G2", help="close these groups (no new key of theirs may use them)")
    role = parser.add_mutually_exclusive_group()
    role.add_argument("--admin", dest="is_admin", action="store_true", default=None, help="make the user an operator")
    role.add_argument("--no-admin", dest="is_admin", action="store_false", help="take the operator role away")


def _run_user_edit(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import users

    if args.groups is None and args.open is None and args.close is None and args.is_admin is None:
        raise ValueError("say what to change: --groups, --open, --close, --admin or --no-admin")
    if args.groups is not None and (args.open is not None or args.close is not None):
        raise ValueError("--groups sets every group: use it without --open and --close")
    wanted = split_list(args.groups) if args.groups is not None else None
    if wanted == []:
        raise ValueError("--groups needs at least one group")

    async def edit(admin: Admin) -> UserRecord:
        before = await users.find_user(admin, args.user)
        opened, closed = split_list(args.open or ""), split_list(args.close or "")
        if wanted is not None:
            opened = [group for group in wanted if group not in before.groups]
            closed = [group for group in before.groups if group not in wanted]
        after = before
        if opened or closed:
            after = await users.change_groups(admin, before.id, opened=opened, closed=closed)
        if args.is_admin is not None and args.is_admin != before.is_admin:
            after = await users.set_role(admin, before.id, args.is_admin)
        await cli.audit(admin, "user.update", f"user {before.id}", before, after)
        return after

    user = cli.run(edit)
    role = "admin" if user.is_admin else "user"
    cli.print_record(user, text=f"{role.capitalize()} {user.name!r} (id {user.id}) now has groups: {', '.join(user.groups)}")
    return 0


def _configure_user_password(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("--password-stdin", action="store_true", help="read the password from stdin (else it is asked for twice)")


def _run_user_password(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import users

    password = read_password(args.password_stdin)

    async def change(admin: Admin) -> UserRecord:
        user = await users.find_user(admin, args.user)
        await users.set_password(admin, user.id, password)
        await cli.audit(admin, "user.password", f"user {user.id}")
        return user

    user = cli.run(change)
    cli.print_record({"id": user.id, "name": user.name}, text=f"Set the console password of {user.name!r}; their earlier sign-ins have ended.")
    return 0


def read_password(from_stdin: bool) -> str:
    """A new password from one line of stdin, or asked for twice at the terminal."""
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise ValueError("--password-stdin: no password on stdin")
        return password
    if not sys.stdin.isatty():
        raise ValueError("no terminal to ask for the password: pass it with --password-stdin")
    password = getpass.getpass("New password: ")
    if getpass.getpass("Again: ") != password:
        raise ValueError("the two passwords differ")
    return password


def _run_user_enable(args: argparse.Namespace, cli: CommandContext) -> int:
    return _switch(args, cli, True)


def _run_user_disable(args: argparse.Namespace, cli: CommandContext) -> int:
    return _switch(args, cli, False)


def _switch(args: argparse.Namespace, cli: CommandContext, enabled: bool) -> int:
    from ..admin import users

    async def switch(admin: Admin) -> UserRecord:
        before = await users.find_user(admin, args.user)
        after = await users.set_user_enabled(admin, before.id, enabled)
        await cli.audit(admin, "user.enable" if enabled else "user.disable", f"user {before.id}", before, after)
        return after

    user = cli.run(switch)
    cli.print_record(user, text=f"User {user.name!r} (id {user.id}) {'enabled' if enabled else 'disabled'}.")
    return 0


def _configure_user_delete(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("--yes", action="store_true", help="confirm: a deleted user cannot be brought back")


def _run_user_delete(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import users

    if not args.yes:
        raise ValueError(f"deleting {args.user!r} cannot be undone (their keys are deleted and tokens revoked; balance, ledger and logs stay): add --yes")

    async def delete(admin: Admin) -> UserRecord:
        before = await users.find_user(admin, args.user)
        after = await users.delete_user(admin, before.id)
        await cli.audit(admin, "user.delete", f"user {before.id}", before, after)
        return after

    user = cli.run(delete)
    text = f"Deleted user {user.name!r} (id {user.id}); their balance of {format_usd(user.balance_micros)} USD stays on their ledger."
    cli.print_record(user, text=text)
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
    from ..admin import credits, users
    from ..runtime.jsonable import to_jsonable

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


# --- sign-ups waiting for approval ---------------------------------------------------


def _configure_user_pending(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true", help="approved and rejected sign-ups too")


def _run_user_pending(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import signups

    listed = cli.run(lambda admin: signups.list_signups(admin, status=None if args.all else "pending"))
    cli.print_table(listed, ["id", "name", "team", "role", "group", "status", "created_at"])
    return 0


def _decide_signup(args: argparse.Namespace, cli: CommandContext, approve: bool) -> Any:
    from ..admin import signups

    async def decide(admin: Admin) -> Any:
        before = await signups.find_signup(admin, args.user)
        if approve:
            after, user = await signups.approve_signup(admin, before.id)
            await cli.audit(admin, "user.create", f"user {user.id}", None, user)
        else:
            after = await signups.reject_signup(admin, before.id)
        await cli.audit(admin, "signup.approve" if approve else "signup.reject", f"signup {after.id}", before, after)
        return after

    return cli.run(decide)


def _run_user_approve(args: argparse.Namespace, cli: CommandContext) -> int:
    signup = _decide_signup(args, cli, True)
    team = f", {signup.role} of team {signup.team!r}" if signup.team else ""
    cli.print_record(signup, text=f"Approved the sign-up of {signup.name!r}: the user is made (group {signup.group!r}{team}); their next sign-in lands.")
    return 0


def _run_user_reject(args: argparse.Namespace, cli: CommandContext) -> int:
    signup = _decide_signup(args, cli, False)
    cli.print_record(signup, text=f"Rejected the sign-up of {signup.name!r}: their single sign-on is refused.")
    return 0
