"""Balances, reservations and the append-only ledger.

Every change of a balance is one ``UPDATE`` (atomic in SQL, so several gateway
processes can share the file), the balance it left read back, and a ledger row
carrying that balance, all inside one write transaction: no other writer runs
between the update and the read. (Not ``UPDATE … RETURNING``: SQLite answers that
through a temporary b-tree: about 5 % of a priced request's instructions for
the four statements of a reservation and its settlement.) Amounts are signed integer
micro-USD: what the change did to the balance.

The ledger holds money that moved only (top-ups, captures, refunds,
adjustments): ``balance_micros`` is the sum of a user's ledger rows. What
requests in flight reserve is kept apart, in ``holds`` (one row per request)
and in the user's and the key's ``held_micros``; what a user may still spend
is ``balance_micros - held_micros``. A request on a priced model takes two writes:

- :func:`hold` reserves its maximum cost against the user's available balance
  *and* the key's quota at once (an open row in ``holds``, no ledger row), or
  changes nothing and raises :class:`HoldRefused`;
- :func:`settle` releases that reservation and captures the real cost (one
  ``capture`` ledger row, counted to the key's ``used_micros``). A reservation
  is released once only: the ``holds`` row is deleted when released, so a settle
  after :func:`release_stale_holds` captures without releasing twice.
"""

from __future__ import annotations

import sqlite3
import time

import attrs

from .request_store import HoldRefused
from .connection import atomic, fetch_all

MONEY_KINDS = ("topup", "capture", "refund", "adjustment", "redemption")  # what the ledger records: money that moved
KEY_CHARGE_KINDS = ("capture", "refund")  # the ledger kinds a key's used amount sums
# a hold to release: older than ?1, or owned by a process whose lease ran out before ?2
ORPHANED = (
    "(created_at < ?1 OR (owner IS NOT NULL AND NOT EXISTS "
    "(SELECT 1 FROM hold_owners AS o WHERE o.id = holds.owner AND o.lease_until >= ?2)))"
)


@attrs.frozen
class Settlement:
    """What :func:`settle` did: the reservation it released, the cost it captured,
    by how much the cost exceeded the reservation, and the balance after."""

    released_micros: int
    cost_micros: int
    overrun_micros: int
    balance_micros: int


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
    key_id: int | None = None,
) -> int:
    """Change a balance by a signed amount with any ledger ``kind``; return the new balance.

    A ``refund`` with a ``key_id`` also takes the amount off that key's used amount.
    """
    amount = int(amount_micros)
    with atomic(conn):
        balance = _change(conn, user_id, amount, kind, request_id, note, key_id)
        if key_id is not None and kind in KEY_CHARGE_KINDS:
            _add_key_used(conn, key_id, -amount)
    return balance


def hold(
    conn: sqlite3.Connection,
    user_id: int,
    amount_micros: int,
    request_id: str,
    key_id: int | None = None,
    owner: str | None = None,
) -> int:
    """Reserve ``amount_micros`` for ``request_id``; return the balance still
    available (the balance less everything reserved).

    The user's available balance must cover it, and so must the key's quota (what is left
    of it once what the key used and what its requests in flight hold are
    counted). Otherwise nothing changes and :class:`HoldRefused` says which.
    """
    if not isinstance(amount_micros, int) or amount_micros < 0:
        raise ValueError("a hold must be a non-negative integer")
    with atomic(conn):
        if key_id is not None:
            reserved = conn.execute(
                "UPDATE api_keys SET held_micros = held_micros + ?1 WHERE id = ?2 "
                "AND (quota_micros IS NULL OR used_micros + held_micros + ?1 <= quota_micros)",
                (amount_micros, key_id),
            ).rowcount
            if not reserved:
                row = conn.execute(
                    "SELECT quota_micros, used_micros, held_micros FROM api_keys WHERE id = ?", (key_id,)
                ).fetchone()
                if row is None:
                    raise ValueError(f"no API key with id {key_id}")
                raise HoldRefused("key_quota", needed=amount_micros, limit=row[0], used=row[1], held=row[2])
        held = conn.execute(
            "UPDATE users SET held_micros = held_micros + ?1 WHERE id = ?2 AND balance_micros - held_micros >= ?1",
            (amount_micros, user_id),
        ).rowcount
        available = get_available(conn, user_id)
        if available is None:
            raise ValueError(f"no user with id {user_id}")
        if not held:
            raise HoldRefused("balance", needed=amount_micros, limit=available)
        conn.execute(
            "INSERT INTO holds (request_id, user_id, key_id, amount_micros, created_at, owner) VALUES (?, ?, ?, ?, ?, ?)",
            (request_id, user_id, key_id, amount_micros, time.time(), owner),
        )
    return available


def settle(
    conn: sqlite3.Connection,
    user_id: int,
    *,
    request_id: str,
    cost_micros: int,
    key_id: int | None = None,
    used_at: float | None = None,
) -> Settlement:
    """Release ``request_id``'s open reservation (if it still has one) and capture
    ``cost_micros``, added to the key's used amount. The cost is charged in full
    even when it exceeds the reservation: the balance may then go below zero by
    that overrun, which the result reports. ``used_at`` also moves the key's
    ``last_used_at`` forward (one update of the key for both)."""
    if not isinstance(cost_micros, int) or cost_micros < 0:
        raise ValueError("a cost must be a non-negative integer")
    with atomic(conn):
        held_row = conn.execute(
            "SELECT amount_micros, user_id, key_id FROM holds WHERE request_id = ?", (request_id,)
        ).fetchone()
        held = 0
        if held_row is not None:
            held, held_user, held_key = held_row
            if held_user != user_id:
                raise ValueError(f"the reservation of {request_id} belongs to user {held_user}, not {user_id}")
            key_id = key_id if key_id is not None else held_key
            conn.execute("DELETE FROM holds WHERE request_id = ?", (request_id,))
        changed = conn.execute(
            "UPDATE users SET balance_micros = balance_micros - ?, held_micros = held_micros - ? WHERE id = ?",
            (cost_micros, held, user_id),
        ).rowcount
        if not changed:
            raise ValueError(f"no user with id {user_id}")
        balance = _balance_after(conn, user_id)
        if cost_micros:
            _ledger(conn, user_id, "capture", -cost_micros, balance, request_id, None, key_id, time.time())
        if key_id is not None and (held or cost_micros or used_at is not None):
            conn.execute(
                "UPDATE api_keys SET held_micros = held_micros - ?, used_micros = used_micros + ?, "
                "last_used_at = max(coalesce(last_used_at, 0), coalesce(?, 0)) WHERE id = ?",
                (held, cost_micros, used_at, key_id),
            )
    return Settlement(held, cost_micros, max(0, cost_micros - held), balance)


def charge(
    conn: sqlite3.Connection, user_id: int, cost_micros: int, *, request_id: str, key_id: int | None = None
) -> int:
    """Capture a cost with no reservation before it; return the new balance."""
    return settle(conn, user_id, request_id=request_id, cost_micros=cost_micros, key_id=key_id).balance_micros


def release_stale_holds(conn: sqlite3.Connection, older_than: float, *, limit: int = 1000) -> int:
    """Release reservations made before the Unix time ``older_than``, and those
    whose owning process's lease ran out (see :mod:`.hold_owners`): their
    request's process died before settling. Return how many were released. No
    money moves, so no ledger row is written. A request settled later still
    captures its cost, with nothing to release."""
    released = 0
    with atomic(conn):
        stale = conn.execute(
            f"DELETE FROM holds WHERE request_id IN (SELECT request_id FROM holds WHERE {ORPHANED} "
            "ORDER BY created_at LIMIT ?3) RETURNING request_id, user_id, key_id, amount_micros",
            (older_than, time.time(), max(1, int(limit))),
        ).fetchall()
        for _request_id, user_id, key_id, amount in sorted(stale):
            conn.execute("UPDATE users SET held_micros = held_micros - ? WHERE id = ?", (amount, user_id))
            if key_id is not None:
                conn.execute("UPDATE api_keys SET held_micros = held_micros - ? WHERE id = ?", (amount, key_id))
            released += 1
    return released


def get_balance(conn: sqlite3.Connection, user_id: int) -> int | None:
    row = conn.execute("SELECT balance_micros FROM users WHERE id = ?", (user_id,)).fetchone()
    return row[0] if row else None


def _balance_after(conn: sqlite3.Connection, user_id: int) -> int:
    """The balance a change of the user's row (in this transaction) left."""
    return int(conn.execute("SELECT balance_micros FROM users WHERE id = ?", (user_id,)).fetchone()[0])


def get_available(conn: sqlite3.Connection, user_id: int) -> int | None:
    """The balance less what the user's requests in flight reserve."""
    row = conn.execute("SELECT balance_micros - held_micros FROM users WHERE id = ?", (user_id,)).fetchone()
    return row[0] if row else None


def list_ledger(
    conn: sqlite3.Connection, user_id: int, *, before_id: int | None = None, limit: int = 50
) -> list[dict]:
    """A user's ledger, newest first, ``before_id`` paging backwards."""
    sql = (
        "SELECT id, user_id, kind, amount_micros, balance_after_micros, request_id, key_id, note, created_at "
        "FROM ledger WHERE user_id = ?"
    )
    sql += (" AND id < ?" if before_id is not None else "") + " ORDER BY id DESC LIMIT ?"
    params = [user_id] + ([before_id] if before_id is not None else []) + [max(1, min(int(limit), 1000))]
    return [dict(row) for row in fetch_all(conn, sql, params)]


def ledger_of_request(conn: sqlite3.Connection, request_id: str) -> list[dict]:
    """The ledger rows a request made (its capture, a refund), oldest first."""
    sql = (
        "SELECT id, user_id, kind, amount_micros, balance_after_micros, request_id, key_id, note, created_at "
        "FROM ledger WHERE request_id = ? ORDER BY id LIMIT 100"
    )
    return [dict(row) for row in fetch_all(conn, sql, (request_id,))]


def list_holds(conn: sqlite3.Connection, user_id: int | None = None) -> list[dict]:
    """Open reservations (of one user, or everyone's), oldest first."""
    sql = "SELECT request_id, user_id, key_id, amount_micros, created_at FROM holds"
    params: list = []
    if user_id is not None:
        sql += " WHERE user_id = ?"
        params.append(user_id)
    return [dict(row) for row in fetch_all(conn, sql + " ORDER BY created_at", params)]


def _change(
    conn: sqlite3.Connection,
    user_id: int,
    amount: int,
    kind: str,
    request_id: str | None,
    note: str | None,
    key_id: int | None = None,
) -> int:
    if kind not in MONEY_KINDS:
        raise ValueError(f"unknown ledger kind {kind!r} (one of {', '.join(MONEY_KINDS)})")
    with atomic(conn):
        if not conn.execute("UPDATE users SET balance_micros = balance_micros + ? WHERE id = ?", (amount, user_id)).rowcount:
            raise ValueError(f"no user with id {user_id}")
        balance = _balance_after(conn, user_id)
        _ledger(conn, user_id, kind, amount, balance, request_id, note, key_id, time.time())
    return balance


def _add_key_used(conn: sqlite3.Connection, key_id: int, amount: int) -> None:
    if not conn.execute("UPDATE api_keys SET used_micros = used_micros + ? WHERE id = ?", (amount, key_id)).rowcount:
        raise ValueError(f"no API key with id {key_id}")


def _ledger(
    conn: sqlite3.Connection,
    user_id: int,
    kind: str,
    amount: int,
    balance_after: int,
    request_id: str | None,
    note: str | None,
    key_id: int | None,
    when: float,
) -> None:
    conn.execute(
        "INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, request_id, note, key_id, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (user_id, kind, amount, balance_after, request_id, note, key_id, when),
    )
