"""Budget counts (``budget_spend``) on SQLite: counted in the hold's transaction,
moved to the real cost when the request settles. See
:mod:`gateway_core.billing.budgets`."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..billing.budgets import BudgetUse
from ..request_store import BudgetWindow, HoldRefused
from . import wallet
from .connection import atomic

# ?1 subject, ?2 period, ?3 the window's start, ?4 a stored window older than this is over
OPEN_WINDOW = (
    "INSERT INTO budget_spend (subject, period, window_start, spent_micros) VALUES (?1, ?2, ?3, 0) "
    "ON CONFLICT (subject, period) DO UPDATE SET window_start = excluded.window_start, spent_micros = 0 "
    "WHERE budget_spend.window_start < ?4"
)
# ?1 amount, ?2 subject, ?3 period, ?4 cap
COUNT = (
    "UPDATE budget_spend SET spent_micros = spent_micros + ?1 WHERE subject = ?2 AND period = ?3 "
    "AND spent_micros + ?1 <= ?4 RETURNING window_start"
)
SPENT = "SELECT spent_micros, window_start FROM budget_spend WHERE subject = ? AND period = ?"
# ?1 signed change, ?2 subject, ?3 period, ?4 the window it was counted in
ADJUST = (
    "UPDATE budget_spend SET spent_micros = CASE WHEN spent_micros + ?1 < 0 THEN 0 ELSE spent_micros + ?1 END "
    "WHERE subject = ?2 AND period = ?3 AND window_start = ?4"
)


def hold_within_budgets(
    conn: sqlite3.Connection,
    user_id: int,
    amount_micros: int,
    request_id: str,
    key_id: int | None,
    owner: str | None,
    budgets: Sequence[BudgetUse],
) -> tuple[int, tuple[BudgetWindow, ...]]:
    """:func:`wallet.hold` and the count of ``amount_micros`` against every budget,
    all or nothing; the balance and the windows counted in."""
    with atomic(conn):
        windows = count_budgets(conn, budgets, amount_micros)
        return wallet.hold(conn, user_id, amount_micros, request_id, key_id, owner), windows


def count_budgets(conn: sqlite3.Connection, budgets: Sequence[BudgetUse], amount: int) -> tuple[BudgetWindow, ...]:
    windows = []
    for use in budgets:
        conn.execute(OPEN_WINDOW, (use.subject, use.period, use.fresh_start, use.stale_before))
        row = conn.execute(COUNT, (amount, use.subject, use.period, use.cap_micros)).fetchone()
        if row is None:
            spent, start = conn.execute(SPENT, (use.subject, use.period)).fetchone()
            raise budget_refused(use, amount, spent, start)
        windows.append(BudgetWindow(use.subject, use.period, row[0]))
    return tuple(windows)


def adjust_budgets(conn: sqlite3.Connection, windows: Sequence[BudgetWindow], change: int) -> None:
    for window in windows:
        conn.execute(ADJUST, (change, window.subject, window.period, window.start))


def budget_refused(use: BudgetUse, amount: int, spent: int, window_start: float) -> HoldRefused:
    return HoldRefused(
        "budget", needed=amount, limit=use.cap_micros, used=spent, budget=use, resets_at=use.reset_time(window_start)
    )


def budget_spending(conn: sqlite3.Connection, subjects: Sequence[str]) -> dict[tuple[str, str], tuple[float, int]]:
    marks = ", ".join("?" for _ in subjects) or "NULL"
    rows = conn.execute(f"SELECT subject, period, window_start, spent_micros FROM budget_spend WHERE subject IN ({marks})", tuple(subjects))
    return {(row[0], row[1]): (row[2], row[3]) for row in rows}

