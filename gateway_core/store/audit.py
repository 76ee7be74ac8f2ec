"""The money invariants, checked against the database (``relaygate check``, and
``relaygate copy-store`` on its target).

1. Each user's balance equals the sum of their ledger rows.
2. Each ledger row's ``balance_after`` is the previous row's plus its amount
   (the first row's is its amount): the ledger is a gap-free chain.
3. Each key's used amount equals the sum of its charges (captures less refunds).
4. Each key's held amount equals the sum of its open reservations.
5. Each user's held amount equals the sum of their open reservations, so what
   the user may spend (the balance less the held amount) is exact. The ledger
   records money only: reservations are checked against ``holds``, not the ledger.
6. Each member's team key is paid by a team's wallet (its owner is a team's
   account), so a team's spend never touches a member's own balance; a team's
   wallet (its account, a ``users`` row whose balance 1 and 5 check as any
   user's) cannot sign in: it has no password and is no site admin.

Each check is one statement (:data:`INVARIANTS`) written for both dialects, with
``?`` for its limit (PostgreSQL's store numbers it); each row it returns is
``(id, name or owner, expected, found)``. :func:`report` turns the rows into an
:class:`AuditReport`; :func:`audit` runs them on SQLite.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from ..records import AuditReport, Problem
from .wallet import KEY_CHARGE_KINDS

__all__ = ["INVARIANTS", "SUMMARY", "AuditReport", "Invariant", "Problem", "audit", "report"]


_CHARGE_KINDS = ", ".join(f"'{kind}'" for kind in KEY_CHARGE_KINDS)


@attrs.frozen
class Invariant:
    check: str
    sql: str  # rows (id, name or owner, expected, found) that break it; ``?``: the most to return
    subject: Callable[[Any, Any], str]
    message: str


def _user(user_id: Any, name: Any) -> str:
    return f"user {name!r} (id {user_id})"


def _key(key_id: Any, name: Any) -> str:
    return f"key {key_id} ({name!r})"


def _ledger_row(row_id: Any, user_id: Any) -> str:
    return f"ledger row {row_id} (user id {user_id})"


INVARIANTS = (
    Invariant(
        "balance",
        "SELECT u.id, u.name, coalesce(l.total, 0), u.balance_micros FROM users AS u "
        "LEFT JOIN (SELECT user_id, sum(amount_micros) AS total FROM ledger GROUP BY user_id) AS l ON l.user_id = u.id "
        "WHERE u.balance_micros != coalesce(l.total, 0) LIMIT ?",
        _user, "balance differs from the sum of its ledger rows",
    ),
    Invariant(
        "chain",
        "SELECT id, user_id, previous + amount_micros, balance_after_micros FROM ("
        " SELECT id, user_id, amount_micros, balance_after_micros,"
        " lag(balance_after_micros, 1, 0) OVER (PARTITION BY user_id ORDER BY id) AS previous FROM ledger"
        ") AS chained WHERE previous + amount_micros != balance_after_micros LIMIT ?",
        _ledger_row, "balance after the row is not the previous balance plus its amount",
    ),
    Invariant(
        "key_used",
        "SELECT k.id, k.name, coalesce(c.charged, 0), k.used_micros FROM api_keys AS k LEFT JOIN ("
        f" SELECT key_id, -sum(amount_micros) AS charged FROM ledger WHERE key_id IS NOT NULL AND kind IN ({_CHARGE_KINDS})"
        " GROUP BY key_id) AS c ON c.key_id = k.id WHERE k.used_micros != coalesce(c.charged, 0) LIMIT ?",
        _key, "used amount differs from the sum of its charges",
    ),
    Invariant(
        "key_held",
        "SELECT k.id, k.name, coalesce(h.total, 0), k.held_micros FROM api_keys AS k LEFT JOIN ("
        " SELECT key_id, sum(amount_micros) AS total FROM holds WHERE key_id IS NOT NULL GROUP BY key_id"
        ") AS h ON h.key_id = k.id WHERE k.held_micros != coalesce(h.total, 0) LIMIT ?",
        _key, "held amount differs from the sum of its open reservations",
    ),
    Invariant(
        "holds",
        "SELECT u.id, u.name, coalesce(h.total, 0), u.held_micros FROM users AS u"
        " LEFT JOIN (SELECT user_id, sum(amount_micros) AS total FROM holds GROUP BY user_id) AS h ON h.user_id = u.id"
        " WHERE u.held_micros != coalesce(h.total, 0) LIMIT ?",
        _user, "held amount differs from the sum of its open reservations",
    ),
    Invariant(
        "team_key",
        "SELECT k.id, k.name, 1, 0 FROM api_keys AS k WHERE k.member_id IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM teams AS t WHERE t.account_id = k.user_id) LIMIT ?",
        _key, "is a team member's key not paid by a team's wallet (1 expected, 0 found)",
    ),
    Invariant(
        "team_wallet",
        "SELECT u.id, u.name, 0, 1 FROM teams AS t JOIN users AS u ON u.id = t.account_id"
        " WHERE u.password_hash IS NOT NULL OR u.is_admin = 1 LIMIT ?",
        _user, "is a team's wallet that could sign in (a password or the admin flag)",
    ),
)  # fmt: skip

# users, keys, ledger rows, open holds, held amount, oldest hold's creation time
SUMMARY = (
    "SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM api_keys), (SELECT count(*) FROM ledger), "
    "(SELECT count(*) FROM holds), (SELECT coalesce(sum(amount_micros), 0) FROM holds), (SELECT min(created_at) FROM holds)"
)


def report(found: Iterable[tuple[Invariant, Sequence[Any]]], summary: Sequence[Any], limit: int) -> AuditReport:
    """The report of the rows ``found`` (each with the invariant it breaks) and
    the :data:`SUMMARY` row."""
    problems = [
        Problem(invariant.subject(row[0], row[1]), invariant.check, int(row[2]), int(row[3]), invariant.message)
        for invariant, row in found
    ]
    users, keys, ledger_rows, holds, held, oldest = summary
    return AuditReport(
        users=int(users),
        keys=int(keys),
        ledger_rows=int(ledger_rows),
        open_holds=int(holds),
        held_micros=int(held),
        oldest_hold_age=None if oldest is None else max(0.0, time.time() - oldest),
        problems=tuple(problems[:limit]),
    )


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
    found = [(invariant, row) for invariant in INVARIANTS for row in conn.execute(invariant.sql, (limit,))]
    return report(found, conn.execute(SUMMARY).fetchone(), limit)
