"""``relaygate group set|list``, ``relaygate user limits`` and ``relaygate key limits``.

Users and keys also take budgets that reset: ``--daily-usd``, ``--weekly-usd``,
``--monthly-usd`` (USD; an empty value clears one).

Rate limits are whole numbers: ``--rpm`` requests per minute, ``--tpm`` tokens
per minute, ``--concurrency`` requests in flight; ``0`` means unlimited and an
empty value none set. A group's limits are the defaults for the users of its
keys, a user's override them (``default`` clears an override, as an empty value
does), a key's cap that key alone. The typed text goes to the admin layer's
:func:`gateway_core.admin.rules.parse_rate_limit`, so a wrong one is refused with
the console's and the API's message. Running gateways see a change within a
second (their key cache's lifetime).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..hookspecs import hookimpl
from ..money import format_usd
from ..records import BUDGET_COLUMNS, LIMIT_COLUMNS, GroupRecord, KeyRecord, UserRecord
from .kit import CommandContext, no_arguments

if TYPE_CHECKING:
    from ..admin import Admin


DEFAULT = "default"  # clears a user's override: the group's default applies again
PERIODS = ("daily", "weekly", "monthly")


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("group set", "create a group or change its price ratio and default rate limits", _configure_group_set, _run_group_set)
    register("group list", "list groups with their ratios and default rate limits", no_arguments, _run_group_list)
    register("user limits", "show or change a user's rate limits (overriding its groups' defaults)", _configure_user_limits, _run_user_limits)
    register("key limits", "show or change an API key's own rate limits", _configure_key_limits, _run_key_limits)


def add_limit_options(parser: argparse.ArgumentParser, *, allow_default: bool = False) -> None:
    """``--rpm``, ``--tpm`` and ``--concurrency`` (``key create`` and ``team edit`` use these
    too), kept as typed for :func:`limit_changes`; ``allow_default`` also takes ``default``."""
    extra = f"; '' or '{DEFAULT}': the group's" if allow_default else "; '': none"
    parser.add_argument("--rpm", metavar="N", help=f"requests per minute (0: unlimited{extra})")
    parser.add_argument("--tpm", metavar="N", help=f"tokens per minute (0: unlimited{extra})")
    parser.add_argument("--concurrency", metavar="N", help=f"requests in flight at once (0: unlimited{extra})")
    parser.set_defaults(_limit_default=allow_default)


def limit_changes(args: argparse.Namespace) -> dict[str, int | None]:
    """The limit options given on the command line, as store column changes: each rate
    limit and budget read by the admin layer's :func:`parse_rate_limit` and :func:`parse_budget`
    (their message for a wrong one, as the console's and the API's)."""
    from ..admin.rules import parse_budget, parse_rate_limit

    takes_default = getattr(args, "_limit_default", False)
    changes = {
        column: None if takes_default and text.strip().lower() == DEFAULT else parse_rate_limit(text, column)
        for column in LIMIT_COLUMNS if (text := getattr(args, column)) is not None
    }  # fmt: skip
    for period, column in zip(PERIODS, BUDGET_COLUMNS):
        text = getattr(args, f"{period}_usd", None)
        if text is not None:
            changes[column] = parse_budget(text, f"{period}_usd")  # the admin layer's rule and words; '' clears
    return changes


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    """``--daily-usd``, ``--weekly-usd`` and ``--monthly-usd``: spending caps that reset ('' clears one)."""
    for period in PERIODS:
        parser.add_argument(f"--{period}-usd", metavar="USD", help=f"most to spend per {period[:-2] if period != 'daily' else 'day'} ('' clears it)")


def _budgets_text(stored: Mapping[str, Any]) -> str:
    """``; budgets: daily 5.00 USD, …`` when any is set, else nothing."""
    caps = [f"{period} {format_usd(stored[column])} USD" for period, column in zip(PERIODS, BUDGET_COLUMNS) if stored.get(column) is not None]
    return "; budgets: " + ", ".join(caps) if caps else ""


# --- groups -------------------------------------------------------------------------


def _configure_group_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--ratio", metavar="R", help="price multiplier, a decimal like 1 or 0.8")
    add_limit_options(parser)


def _run_group_set(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import groups

    ratio_ppm = groups.parse_ratio(args.ratio) if args.ratio is not None else None
    changes = limit_changes(args)

    async def set_group(admin: Admin) -> GroupRecord:
        before = next((group for group in await groups.list_groups(admin) if group.name == args.name), None)
        group = await groups.set_group(admin, args.name, ratio_ppm=ratio_ppm, limits=changes)
        await cli.audit(admin, "group.set", f"group {args.name}", before, group)
        return group

    group = cli.run(set_group)
    record = _group_record(group)
    cli.print_record(record, text=f"Group {args.name!r}: ratio {record['ratio']}, {_describe(record)}.")
    return 0


def _run_group_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import groups

    rows = [_group_record(group) for group in cli.run(groups.list_groups)]
    cli.print_table(rows, ["name", "ratio", *LIMIT_COLUMNS])
    return 0


def _group_record(group: GroupRecord) -> dict[str, Any]:
    from ..admin import groups

    limits = {"rpm": group.rpm, "tpm": group.tpm, "concurrency": group.concurrency}
    return {"name": group.name, "ratio": groups.format_ratio(group.ratio_ppm), "ratio_ppm": group.ratio_ppm,
            **{column: value or 0 for column, value in limits.items()}}  # fmt: skip


# --- users and keys --------------------------------------------------------------------


def _configure_user_limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    add_limit_options(parser, allow_default=True)
    add_budget_options(parser)


def _run_user_limits(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import users

    changes = limit_changes(args)

    async def change(admin: Admin) -> tuple[UserRecord, dict[str, int | None]]:
        user = await users.find_user(admin, args.user)
        if not changes:
            return user, await users.user_limits(admin, user)
        before = await users.user_limits(admin, user)
        stored = await users.set_user_limits(admin, user, changes)
        await cli.audit(admin, "user.limits", f"user {user.id}", before, stored)
        return user, stored

    user, stored = cli.run(change)
    record = {"user": user.name, "user_id": user.id, **stored}
    described = ", ".join(f"{c} {DEFAULT if stored[c] is None else _number(stored[c])}" for c in LIMIT_COLUMNS)
    cli.print_record(record, text=f"User {user.name!r}: {described} ({DEFAULT}: the defaults of the key's group){_budgets_text(stored)}.")
    return 0


def _configure_key_limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int, metavar="ID")
    add_limit_options(parser)
    add_budget_options(parser)


def _run_key_limits(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import keys

    changes = limit_changes(args)

    async def change(admin: Admin) -> tuple[KeyRecord, dict[str, int | None]]:
        before = await keys.get_key(admin, args.id)
        key, stored = await keys.set_key_limits(admin, args.id, changes)
        if changes:
            await cli.audit(admin, "key.limits", f"key {args.id}", before, key)
        return key, stored

    key, stored = cli.run(change)
    record = {"id": key.id, "name": key.name, **{c: stored[c] or 0 for c in LIMIT_COLUMNS}, **{c: stored.get(c) for c in BUDGET_COLUMNS}}
    cli.print_record(record, text=f"API key {key.id} ({key.name!r}, {key.prefix}): {_describe(stored)}{_budgets_text(stored)}.")
    return 0


# --- helpers ----------------------------------------------------------------------------


def _describe(limits: Mapping[str, Any]) -> str:
    return ", ".join(f"{column} {_number(limits.get(column))}" for column in LIMIT_COLUMNS)


def _number(value: int | None) -> str:
    return str(value) if value else "unlimited"

