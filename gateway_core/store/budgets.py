"""Budgets on SQLite: a reservation checked against every cap in the hold's
transaction. A cap's spend is its window's hourly buckets (``budget_buckets``,
kept by a trigger on the ledger's captures) plus its open reservations. See
:mod:`gateway_core.billing.budgets`."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..billing.budgets import BudgetUse
from .request_store import HoldRefused
from . import wallet
from .connection import atomic


def spent_sql(column: str) -> str:
    """?1 subject, ?2 the window's first hour, ?3 the key's or user's id (``column``
    of ``holds``): what the window counts, and its oldest hour with spend."""
    return (
        "SELECT (SELECT coalesce(sum(spent_micros), 0) FROM budget_buckets WHERE subject = ?1 AND hour >= ?2) "
        f"+ (SELECT coalesce(sum(amount_micros), 0) FROM holds WHERE {column} = ?3), "
        "(SELECT min(hour) FROM budget_buckets WHERE subject = ?1 AND hour >= ?2 AND spent_micros > 0)"
    )


SPENT_BY_KEY = spent_sql("key_id")
SPENT_BY_USER = spent_sql("user_id")


def hold_within_budgets(
    conn: sqlite3.Connection,
    user_id: int,
    amount_micros: int,
    request_id: str,
    key_id: int | None,
    owner: str | None,
    budgets: Sequence[BudgetUse],
) -> int:
    """:func:`wallet.hold` once every budget has room for ``amount_micros``
    (the one writer serializes reservations); the balance available after."""
    with atomic(conn):
        for use in budgets:
            statement = SPENT_BY_KEY if use.is_key else SPENT_BY_USER
            spent, oldest = conn.execute(statement, (use.subject, use.first_hour, use.subject_id)).fetchone()
            if spent + amount_micros > use.cap_micros:
                raise budget_refused(use, amount_micros, spent, oldest)
        return wallet.hold(conn, user_id, amount_micros, request_id, key_id, owner)


def budget_refused(use: BudgetUse, amount: int, spent: int, oldest_hour: int | None) -> HoldRefused:
    return HoldRefused("budget", needed=amount, limit=use.cap_micros, used=spent, budget=use, resets_at=use.reset_time(oldest_hour))


def budget_spending(conn: sqlite3.Connection, uses: Sequence[BudgetUse]) -> list[tuple[int, int | None]]:
    """What each cap's window counts now, and its oldest hour with spend."""
    found = []
    for use in uses:
        statement = SPENT_BY_KEY if use.is_key else SPENT_BY_USER
        spent, oldest = conn.execute(statement, (use.subject, use.first_hour, use.subject_id)).fetchone()
        found.append((int(spent), oldest))
    return found
