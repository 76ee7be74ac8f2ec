"""Balances and the append-only ledger.

Every change of a balance is one ``UPDATE … RETURNING`` (atomic in SQL, so
several gateway processes can share the file) plus a ledger row carrying the
balance after it, both inside one transaction. Amounts are signed integer
micro-USD: what the change did to the balance.
"""

from __future__ import annotations

import sqlite3
import time

from .connection import atomic, fetch_all
from .keys import add_key_usage
from .migrations import LEDGER_KINDS


def topup(conn: sqlite3.Connection, user_id: int, amount_micros: int, note: str | None = None) -> int:
    """Credit a user; return the new balance. ``ValueError`` for an amount ≤ 0 or an unknown user."""
    if not isinstance(amount_micros, int) or amount_micros <= 0:
        raise ValueError("a top-up must be a positive amount")
    return _change(conn, user_id, amount_micros, "topup", None, note)


def adjust(
    conn: sqlite3.Connection,
    user_id: int,
    amount_micros: int,
    *,
    kind: str = "adjustment",
    request_id: str | None = None,
    note: str | None = None,
) -> int:
    """Change a balance by a signed amount with any ledger ``kind``; return the new balance."""
    return _change(conn, user_id, int(amount_micros), kind, request_id, note)


def hold(conn: sqlite3.Connection, user_id: int, amount_micros: int, *, request_id: str) -> int | None:
    """Reserve ``amount_micros`` if the balance covers it; return the new balance,
    or ``None`` (nothing changed) when it does not."""
    if amount_micros < 0:
        raise ValueError("a hold must not be negative")
    with atomic(conn):
        rows = conn.execute(
            "UPDATE users SET balance_micros = balance_micros - ? WHERE id = ? AND balance_micros >= ? "
            "RETURNING balance_micros",
            (amount_micros, user_id, amount_micros),
        ).fetchall()
        if not rows:
            return None
        _ledger(conn, user_id, "hold", -amount_micros, rows[0][0], request_id, None)
    return rows[0][0]


def settle(
    conn: sqlite3.Connection,
    user_id: int,
    *,
    held_micros: int,
    cost_micros: int,
    request_id: str,
    key_id: int | None = None,
) -> int:
    """Release a hold and capture the actual cost (added to the key's usage);
    return the new balance. The balance may go below zero if the cost exceeds it."""
    with atomic(conn):
        balance = None
        if held_micros:
            balance = _change(conn, user_id, held_micros, "release", request_id, None)
        if cost_micros:
            balance = _change(conn, user_id, -cost_micros, "capture", request_id, None)
            if key_id is not None:
                add_key_usage(conn, key_id, cost_micros)
        if balance is None:
            balance = get_balance(conn, user_id)
            if balance is None:
                raise ValueError(f"no user with id {user_id}")
    return balance


def charge(
    conn: sqlite3.Connection, user_id: int, cost_micros: int, *, request_id: str, key_id: int | None = None
) -> int:
    """Capture a cost with no hold before it; return the new balance."""
    return settle(conn, user_id, held_micros=0, cost_micros=cost_micros, request_id=request_id, key_id=key_id)


def get_balance(conn: sqlite3.Connection, user_id: int) -> int | None:
    row = conn.execute("SELECT balance_micros FROM users WHERE id = ?", (user_id,)).fetchone()
    return row[0] if row else None


def list_ledger(
    conn: sqlite3.Connection, user_id: int, *, before_id: int | None = None, limit: int = 50
) -> list[dict]:
    """A user's ledger, newest first, ``before_id`` paging backwards."""
    sql = "SELECT id, user_id, kind, amount_micros, balance_after_micros, request_id, note, created_at FROM ledger"
    sql += " WHERE user_id = ?" + (" AND id < ?" if before_id is not None else "") + " ORDER BY id DESC LIMIT ?"
    params = [user_id] + ([before_id] if before_id is not None else []) + [max(1, min(int(limit), 1000))]
    return [dict(row) for row in fetch_all(conn, sql, params)]


def _change(
    conn: sqlite3.Connection, user_id: int, amount: int, kind: str, request_id: str | None, note: str | None
) -> int:
    if kind not in LEDGER_KINDS:
        raise ValueError(f"unknown ledger kind {kind!r} (one of {', '.join(LEDGER_KINDS)})")
    with atomic(conn):
        rows = conn.execute(
            "UPDATE users SET balance_micros = balance_micros + ? WHERE id = ? RETURNING balance_micros",
            (amount, user_id),
        ).fetchall()
        if not rows:
            raise ValueError(f"no user with id {user_id}")
        _ledger(conn, user_id, kind, amount, rows[0][0], request_id, note)
    return rows[0][0]


def _ledger(
    conn: sqlite3.Connection,
    user_id: int,
    kind: str,
    amount: int,
    balance_after: int,
    request_id: str | None,
    note: str | None,
) -> None:
    conn.execute(
        "INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, request_id, note, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (user_id, kind, amount, balance_after, request_id, note, time.time()),
    )
