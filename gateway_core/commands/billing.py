"""``relaygate wallet show|adjust``, ``relaygate logs`` and ``relaygate check``.

- ``wallet show USER [--limit N] [--before ID]``: the balance, what requests in
  progress hold (their open reservations, apart from the ledger), and the latest
  ledger rows (newest first: money that moved only).
- ``wallet adjust USER AMOUNT --note TEXT``: a signed correction by the operator.
- ``logs [--key ID] [--user NAME] [--team NAME] [--model M] [--status S] [--since T] [--until T]
  [--limit N] [--before CURSOR]``: the usage log, newest first; a full page ends
  with the ``--before`` cursor of the next one.
- ``logs export [the same filters] [--format csv|jsonl] [--output FILE]``: every
  row of the filter, streamed (:mod:`gateway_core.admin.usage_export`).
- ``check``: verifies the money invariants (see :func:`gateway_core.admin.wallet.check_ledger`);
  exits 1 with a report when one is broken.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TextIO

import attrs

from ..hookspecs import hookimpl
from ..money import format_usd, parse_usd
from ..records import Cursor, UsageFilter
from .kit import EXIT_ERROR, CommandContext, CommandError, no_arguments

if TYPE_CHECKING:
    from ..admin import Admin


LOG_COLUMNS = [
    "created_at", "request_id", "key_id", "key_name", "model", "status", "input_tokens", "output_tokens",
    "cached_tokens", "cost_micros", "estimated", "end_reason", "duration_ms",
]  # fmt: skip
LEDGER_COLUMNS = ["id", "created_at", "kind", "amount_micros", "balance_after_micros", "request_id", "key_id", "note"]
_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("wallet show", "show a user's balance, reservations and latest ledger rows", _configure_wallet_show, _run_wallet_show)
    register("wallet adjust", "correct a user's balance by a signed amount (kept in the ledger)", _configure_wallet_adjust, _run_wallet_adjust)
    register("logs", "show the usage log, newest first", _configure_logs, _run_logs)
    register("logs export", "write every row of the usage log's filter as CSV or JSON lines", _configure_logs_export, _run_logs_export)
    register("check", "verify balances against the ledger and keys' usage against their charges", no_arguments, _run_check)


# --- wallet ----------------------------------------------------------------------------


def _configure_wallet_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("--limit", type=_page_size, default=20, metavar="N", help="ledger rows to show (default 20)")
    parser.add_argument("--before", type=int, metavar="ID", help="show ledger rows older than this row id")


def _run_wallet_show(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import users, wallet

    async def show(admin: Admin) -> wallet.Wallet:
        user = await users.find_user(admin, args.user)
        return await wallet.wallet(admin, user.id, before_id=args.before, limit=args.limit)

    found = cli.run(show)
    user = found.user
    ledger = [attrs.asdict(row) for row in found.ledger]
    if cli.json:
        cli.print_record({
            "user": user.name, "user_id": user.id, "balance_micros": user.balance_micros,
            "held_micros": found.held_micros, "available_micros": found.available_micros,
            "open_holds": found.open_holds, "holds": [attrs.asdict(hold) for hold in found.holds], "ledger": ledger,
        })  # fmt: skip
        return 0
    line = f"{user.name} (id {user.id}): balance {format_usd(user.balance_micros)} USD"
    if found.open_holds:
        line += (
            f"; {format_usd(found.held_micros)} USD held by {found.open_holds} request(s) in progress, "
            f"{format_usd(found.available_micros)} USD available"
        )
    print(line)
    cli.print_table(ledger, LEDGER_COLUMNS)
    if found.more:
        print(f"older rows: --before {ledger[-1]['id']}")
    return 0


def _configure_wallet_adjust(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("amount", metavar="AMOUNT", help="USD, signed: 2.50 credits, -2.50 debits")
    parser.add_argument("--note", required=True, help="why (kept in the ledger)")


def _run_wallet_adjust(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import users, wallet
    from ..runtime.jsonable import to_jsonable

    text = args.amount.strip()
    negative = text.startswith("-")
    amount = parse_usd(text[1:] if negative else text.lstrip("+"))
    if amount == 0:
        raise ValueError("an adjustment must not be zero")
    amount = -amount if negative else amount

    async def adjust(admin: Admin) -> tuple[int, int]:
        user = await users.find_user(admin, args.user)
        balance = await wallet.adjust(admin, user.id, amount, args.note)
        after = await users.get_user(admin, user.id)
        await cli.audit(admin, "wallet.adjustment", f"user {user.id}", user, {**to_jsonable(after), "amount_micros": amount, "note": args.note})
        return user.id, balance

    user_id, balance = cli.run(adjust)
    record = {"user": args.user, "user_id": user_id, "amount_micros": amount, "balance_micros": balance}
    cli.print_record(record, text=f"Adjusted {args.user!r} by {format_usd(amount)} USD; balance is now {format_usd(balance)} USD.")
    return 0


# --- logs ----------------------------------------------------------------------------------


def _add_log_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key", type=int, metavar="ID", help="one API key's requests")
    parser.add_argument("--user", metavar="NAME", help="one user's requests")
    parser.add_argument("--team", metavar="NAME", help="the requests charged to one team")
    parser.add_argument("--model", metavar="M", help="requests for this model (as the client named it)")
    parser.add_argument("--status", type=int, metavar="S", help="requests answered with this HTTP status")
    parser.add_argument("--since", type=parse_time, metavar="T", help="from this time: ISO 8601 (UTC if no offset), Unix seconds, or an age like 30m, 2h, 7d")
    parser.add_argument("--until", type=parse_time, metavar="T", help="before this time (same forms as --since)")


def _configure_logs(parser: argparse.ArgumentParser) -> None:
    _add_log_filters(parser)
    parser.add_argument("--limit", type=_page_size, default=50, metavar="N", help="rows per page (default 50, at most 1000)")
    parser.add_argument("--before", type=_cursor, metavar="CURSOR", help="the page after the one that printed this cursor")


def _configure_logs_export(parser: argparse.ArgumentParser) -> None:
    _add_log_filters(parser)
    parser.add_argument("--format", default="csv", help="csv (default) or jsonl: one JSON object a line")  # checked by the admin layer
    parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: standard output)")


async def _log_filters(admin: Admin, args: argparse.Namespace) -> UsageFilter:
    from ..admin import teams, users

    user_id = (await users.find_user(admin, args.user)).id if args.user else None
    team_id = (await teams.find_team(admin, args.team)).id if args.team else None
    return UsageFilter(key_id=args.key, user_id=user_id, model=args.model, status=args.status, since=args.since, until=args.until, team_id=team_id)


def _run_logs(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import usage

    async def page(admin: Admin) -> usage.UsagePage:
        return await usage.page_usage(admin, await _log_filters(admin, args), before=args.before, limit=args.limit)

    found = cli.run(page)
    cli.print_table(found.rows, LOG_COLUMNS)
    if not cli.json and found.more:
        print(f"next page: --before {usage.page_cursor(found.rows[-1])}")
    return 0


def _run_logs_export(args: argparse.Namespace, cli: CommandContext) -> int:
    """Every row of the filter, newest first, written as it is read: a page of rows in
    memory at a time whatever the range (archive with this before pruning)."""
    from ..admin import usage_export

    usage_export.media_type(args.format)  # an unknown format, said before anything is written

    async def export(admin: Admin) -> None:
        filters = await _log_filters(admin, args)
        with _output(args.output) as out:
            async for text in usage_export.export_usage(admin, filters, args.format):
                out.write(text)

    try:
        cli.run(export)
    except OSError as exc:
        raise CommandError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    return 0


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[TextIO]:
    """The export's destination: ``path`` (written whole or not at all) or standard output."""
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8", newline="") as out:
        try:
            yield out
        except BaseException:
            out.close()
            os.unlink(partial)
            raise
    os.replace(partial, path)


def parse_time(text: str) -> float:
    """Unix seconds from ISO 8601 (UTC when it has no offset), Unix seconds, or an age ("90s", "15m", "2h", "7d", "1w")."""
    value = text.strip()
    match = _RELATIVE.fullmatch(value)
    if match:
        return time.time() - float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a time like 2026-01-31T12:00:00Z, Unix seconds, or an age like 30m, 2h, 7d; got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.timestamp()


# --- check ------------------------------------------------------------------------------------


def _run_check(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import wallet

    report = cli.run(wallet.check_ledger)
    status = 0 if report.ok else EXIT_ERROR
    if cli.json:
        cli.print_record({
            "ok": report.ok, "users": report.users, "keys": report.keys, "ledger_rows": report.ledger_rows,
            "open_holds": report.open_holds, "held_micros": report.held_micros,
            "oldest_hold_age_s": report.oldest_hold_age, "problems": list(report.problems),
        })  # fmt: skip
        return status
    summary = f"Checked {report.users} user(s), {report.keys} key(s), {report.ledger_rows} ledger row(s); "
    if report.open_holds:
        summary += (
            f"{report.open_holds} open reservation(s) hold {format_usd(report.held_micros)} USD "
            f"(oldest {round(report.oldest_hold_age or 0)} s)."
        )
    else:
        summary += "no open reservations."
    print(summary)
    for problem in report.problems:
        print(
            f"PROBLEM [{problem.check}] {problem.subject}: {problem.message}: "
            f"expected {format_usd(problem.expected)} USD, found {format_usd(problem.found)} USD"
        )
    if report.ok:
        print("OK: every balance equals the sum of its ledger rows, every key's used amount the sum of its charges.")
    else:
        print(f"{len(report.problems)} problem(s) found.")
    return status


def _cursor(text: str) -> Cursor:
    from ..admin import usage

    try:
        return usage.parse_cursor(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _page_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 1000, got {value}")
    return value

