"""The money invariants, checked against the database (``relaygate check``).

1. Each user's balance equals the sum of their ledger rows.
2. Each ledger row's ``balance_after`` is the previous row's plus its amount
   (the first row's is its amount): the ledger is a gap-free chain.
3. Each key's used amount equals the sum of its charges (captures less refunds).
4. Each key's held amount equals the sum of its open reservations.
5. Each user's open reservations equal their holds less their releases in the ledger.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..records import AuditReport, Problem
from .wallet import KEY_CHARGE_KINDS

__all__ = ["AuditReport", "Problem", "audit"]


_CHARGE_KINDS = ", ".join(f"'{kind}'" for kind in KEY_CHARGE_KINDS)


def audit(conn: sqlite3.Connection, *, max_problems: int = 100) -> AuditReport:
    """Check every invariant in one read transaction; report up to ``max_problems``."""
    if conn.in_transaction:
        return _audit(conn, max_problems)
    conn.execute("BEGIN")  # one snapshot for every query (a deferred read transaction)
    try:
        return _audit(conn, max_problems)
    finally:
        conn.execute("COMMIT")


def _audit(conn: sqlite3.Connection, limit: int) -> AuditReport:
    found = {check: conn.execute(sql, (limit,)).fetchall() for check, sql in AUDIT_CHECKS.items()}
    totals = conn.execute(AUDIT_TOTALS).fetchone()
    return audit_report(found, totals, limit)


# each check's rows, at most ? of them (the same SQL on both stores)
AUDIT_CHECKS = {
    "balance": (
        "SELECT u.id, u.name, u.balance_micros, coalesce(l.total, 0) FROM users AS u "
        "LEFT JOIN (SELECT user_id, sum(amount_micros) AS total FROM ledger GROUP BY user_id) AS l ON l.user_id = u.id "
        "WHERE u.balance_micros != coalesce(l.total, 0) LIMIT ?"
    ),
    "chain": (
        "SELECT id, user_id, amount_micros, balance_after_micros, previous FROM ("
        " SELECT id, user_id, amount_micros, balance_after_micros,"
        " lag(balance_after_micros, 1, 0) OVER (PARTITION BY user_id ORDER BY id) AS previous FROM ledger"
        ") AS chained WHERE previous + amount_micros != balance_after_micros LIMIT ?"
    ),
    "key_used": (
        "SELECT k.id, k.name, k.used_micros, coalesce(c.charged, 0) FROM api_keys AS k LEFT JOIN ("
        f" SELECT key_id, -sum(amount_micros) AS charged FROM ledger WHERE key_id IS NOT NULL AND kind IN ({_CHARGE_KINDS})"
        " GROUP BY key_id) AS c ON c.key_id = k.id WHERE k.used_micros != coalesce(c.charged, 0) LIMIT ?"
    ),
    "key_held": (
        "SELECT k.id, k.name, k.held_micros, coalesce(h.total, 0) FROM api_keys AS k LEFT JOIN ("
        " SELECT key_id, sum(amount_micros) AS total FROM holds WHERE key_id IS NOT NULL GROUP BY key_id"
        ") AS h ON h.key_id = k.id WHERE k.held_micros != coalesce(h.total, 0) LIMIT ?"
    ),
    "holds": (
        "SELECT u.id, u.name, coalesce(h.total, 0), coalesce(l.open_total, 0) FROM users AS u"
        " LEFT JOIN (SELECT user_id, sum(amount_micros) AS total FROM holds GROUP BY user_id) AS h ON h.user_id = u.id"
        " LEFT JOIN (SELECT user_id, -sum(amount_micros) AS open_total FROM ledger WHERE kind IN ('hold', 'release')"
        " GROUP BY user_id) AS l ON l.user_id = u.id WHERE coalesce(h.total, 0) != coalesce(l.open_total, 0) LIMIT ?"
    ),
}
AUDIT_TOTALS = (
    "SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM api_keys), (SELECT coalesce(max(id), 0) FROM ledger), "
    "count(*), coalesce(sum(amount_micros), 0), min(created_at) FROM holds"
)


def audit_report(found: Mapping[str, Sequence[Sequence[Any]]], totals: Sequence[Any], limit: int) -> AuditReport:
    """The report of the rows each of :data:`AUDIT_CHECKS` found and of :data:`AUDIT_TOTALS`' one row."""
    problems: list[Problem] = []
    for user_id, name, balance, total in found["balance"]:
        problems.append(Problem(f"user {name!r} (id {user_id})", "balance", total, balance,
                                "balance differs from the sum of its ledger rows"))  # fmt: skip
    for row_id, user_id, amount, after, previous in found["chain"]:
        problems.append(Problem(f"ledger row {row_id} (user id {user_id})", "chain", previous + amount, after,
                                "balance after the row is not the previous balance plus its amount"))  # fmt: skip
    for key_id, name, used, charged in found["key_used"]:
        problems.append(Problem(f"key {key_id} ({name!r})", "key_used", charged, used,
                                "used amount differs from the sum of its charges"))  # fmt: skip
    for key_id, name, held, open_total in found["key_held"]:
        problems.append(Problem(f"key {key_id} ({name!r})", "key_held", open_total, held,
                                "held amount differs from the sum of its open reservations"))  # fmt: skip
    for user_id, name, open_total, ledger_open in found["holds"]:
        problems.append(Problem(f"user {name!r} (id {user_id})", "holds", ledger_open, open_total,
                                "open reservations differ from the ledger's holds less its releases"))  # fmt: skip
    users, keys, ledger_rows, holds, held, oldest = totals
    return AuditReport(
        users=users,
        keys=keys,
        ledger_rows=ledger_rows,
        open_holds=holds,
        held_micros=held,
        oldest_hold_age=None if oldest is None else max(0.0, time.time() - oldest),
        problems=tuple(problems[:limit]),
    )
