"""``relaygate code create|list|disable`` and ``relaygate wallet redeem``.

``code create`` prints the batch's codes once — CSV (``id,code``) by default, a
JSON array ``[{"id": …, "code": "…"}]`` with ``--json`` — and they cannot be
shown again (the database keeps their hashes). ``wallet redeem USER CODE``
credits a code to a user; a wrong, used, expired or disabled code exits 1 with
one line saying which.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..hookspecs import hookimpl
from ..money import format_usd, parse_usd
from .kit import CommandContext, parse_expires

if TYPE_CHECKING:
    from ..admin import Admin
    from ..billing.codes import Redeemed, RedemptionCode


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("code create", "create a batch of redemption codes (printed once: CSV, or --json)", _configure_create, _run_create)
    register("code list", "list redemption codes (never the codes themselves)", _configure_list, _run_list)
    register("code disable", "disable a redemption code", _configure_disable, _run_disable)
    register("wallet redeem", "credit a redemption code to a user's wallet", _configure_redeem, _run_redeem)


def _configure_create(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--count", type=int, required=True, metavar="N", help="how many codes")
    parser.add_argument("--value", required=True, metavar="USD", help="what each code credits, in USD")
    parser.add_argument("--expires", metavar="ISO8601", help="when the codes stop working (UTC if no offset)")
    parser.add_argument("--group", metavar="G", help="a group each code opens to the user who redeems it")
    parser.add_argument("--note", metavar="TEXT", help="a note kept with the batch")


def _run_create(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import codes

    value = parse_usd(args.value)
    expires_at = parse_expires(args.expires) if args.expires is not None else None
    async def create(admin: Admin) -> list[tuple[int, str]]:
        batch = codes.new_batch()
        made = await codes.create_codes(
            admin, count=args.count, value_micros=value, expires_at=expires_at, group=args.group, note=args.note, batch=batch
        )
        summary = {"batch": batch, "count": len(made), "ids": [code_id for code_id, _ in made], "value_micros": value,
                   "group": args.group, "expires_at": expires_at, "note": args.note}  # fmt: skip
        await cli.audit(admin, "code.create", f"codes {batch}", None, summary)  # never the codes themselves
        return made

    created = cli.run(create)
    if cli.json:
        print(json.dumps([{"id": code_id, "code": code} for code_id, code in created]))
    else:
        sys.stdout.write("id,code\n" + "".join(f"{code_id},{code}\n" for code_id, code in created))
    return 0


def _configure_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch", help="only this batch's codes")
    parser.add_argument("--limit", type=int, default=1000, metavar="N")


def _run_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import codes

    listed = cli.run(lambda admin: codes.list_codes(admin, batch=args.batch, limit=args.limit))
    now = time.time()
    rows = [{**_fields(code), "state": code.state(now), "value": format_usd(code.value_micros)} for code in listed]
    cli.print_table(rows, ["id", "batch", "prefix", "value", "group", "state", "expires_at", "redeemed_by", "redeemed_at", "note"])
    return 0


def _fields(code: RedemptionCode) -> dict[str, Any]:
    return {
        "id": code.id, "batch": code.batch, "prefix": code.prefix, "value_micros": code.value_micros, "group": code.group,
        "expires_at": code.expires_at, "note": code.note, "enabled": code.enabled, "created_at": code.created_at,
        "redeemed_by": code.redeemed_by, "redeemed_at": code.redeemed_at,
    }  # fmt: skip


def _configure_disable(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int, metavar="ID")


def _run_disable(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import codes

    async def disable(admin: Admin) -> None:
        await codes.disable_code(admin, args.id)
        await cli.audit(admin, "code.disable", f"code {args.id}", {"enabled": True}, {"enabled": False})

    cli.run(disable)
    cli.print_record({"id": args.id, "enabled": False}, text=f"Redemption code {args.id} disabled.")
    return 0


def _configure_redeem(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("code", metavar="CODE")


def _run_redeem(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import codes, users
    from ..runtime.jsonable import to_jsonable

    async def redeem(admin: Admin) -> Redeemed:
        user = await users.find_user(admin, args.user)
        done = await codes.redeem_code(admin, user.id, args.code)
        after = await users.get_user(admin, user.id)
        await cli.audit(admin, "wallet.redeem", f"user {user.id}", user, {**to_jsonable(after), "redemption": to_jsonable(done)})
        return done

    done = cli.run(redeem)
    opened = f"; group {done.group!r} opened" if done.group else ""
    record = {"user": args.user, "code_id": done.code_id, "value_micros": done.value_micros,
              "balance_micros": done.balance_micros, "group": done.group}  # fmt: skip
    cli.print_record(record, text=f"Credited {format_usd(done.value_micros)} USD to {args.user!r}: balance {format_usd(done.balance_micros)} USD{opened}.")
    return 0
