"""Redemption codes on SQLite (see :mod:`gateway_core.billing.codes`).

A code is redeemed by one conditional ``UPDATE … RETURNING`` (not redeemed, not
disabled, not expired) in the same transaction as the credit (a ``redemption``
ledger row) and the group it opens: two redeemers of one code cannot both pass
the condition, whatever the number of processes sharing the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..billing.codes import DISABLED, EXPIRED, USED, WRONG, Redeemed, RedemptionCode
from .connection import atomic, fetch_all
from .users import open_groups
from .wallet import _change

SELECT_CODES = (
    "SELECT c.id, c.batch, c.prefix, c.value_micros, c.group_name, c.expires_at, c.note, c.enabled, c.created_at, "
    "u.name AS redeemed_by, c.redeemed_at FROM redemption_codes AS c LEFT JOIN users AS u ON u.id = c.redeemed_by"
)
# ?1 user, ?2 now, ?3 code hash
REDEEM = (
    "UPDATE redemption_codes SET redeemed_by = ?1, redeemed_at = ?2 WHERE code_hash = ?3 AND redeemed_by IS NULL "
    "AND enabled = 1 AND (expires_at IS NULL OR expires_at > ?2) RETURNING id, value_micros, group_name"
)
WHY_NOT = "SELECT redeemed_by, enabled, expires_at FROM redemption_codes WHERE code_hash = ?"


def create_codes(
    conn: sqlite3.Connection,
    batch: str,
    hashes: Sequence[tuple[str, str]],
    *,
    value_micros: int,
    group: str | None,
    expires_at: float | None,
    note: str | None,
    now: float,
) -> list[int]:
    """Store one batch of codes (``(hash, prefix)`` each); their ids, in order."""
    ids = []
    with atomic(conn):
        for code_hash, prefix in hashes:
            row = conn.execute(
                "INSERT INTO redemption_codes (batch, code_hash, prefix, value_micros, group_name, expires_at, note, enabled, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?) RETURNING id",
                (batch, code_hash, prefix, value_micros, group, expires_at, note, now),
            ).fetchone()
            ids.append(row[0])
    return ids


def list_codes(conn: sqlite3.Connection, batch: str | None, limit: int) -> list[RedemptionCode]:
    where, params = (" WHERE c.batch = ?", [batch]) if batch else ("", [])
    rows = fetch_all(conn, f"{SELECT_CODES}{where} ORDER BY c.id DESC LIMIT ?", [*params, max(1, min(int(limit), 10000))])
    return [code_record(row) for row in rows]


def disable_code(conn: sqlite3.Connection, code_id: int) -> bool:
    return conn.execute("UPDATE redemption_codes SET enabled = 0 WHERE id = ?", (code_id,)).rowcount > 0


def redeem_code(conn: sqlite3.Connection, user_id: int, code_hash: str, now: float) -> Redeemed | str:
    """Credit the code to the user, all or nothing; else why not (``wrong``, ``used``, ``expired``, ``disabled``)."""
    with atomic(conn):
        if conn.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone() is None:
            raise ValueError(f"no user with id {user_id}")
        row = conn.execute(REDEEM, (user_id, now, code_hash)).fetchone()
        if row is None:
            return why_not(conn.execute(WHY_NOT, (code_hash,)).fetchone(), now)
        code_id, value, group = row
        balance = _change(conn, user_id, value, "redemption", None, f"redemption code {code_id}")
        if group is not None:
            open_groups(conn, user_id, [group])
    return Redeemed(code_id, value, balance, group)


def why_not(row: Sequence | None, now: float) -> str:
    """Why a code (its ``redeemed_by, enabled, expires_at``) cannot be redeemed."""
    if row is None:
        return WRONG
    redeemed_by, enabled, expires_at = row
    if redeemed_by is not None:
        return USED
    if not enabled:
        return DISABLED
    return EXPIRED if expires_at is not None and expires_at <= now else WRONG


def code_record(row) -> RedemptionCode:
    return RedemptionCode(
        id=row["id"], batch=row["batch"], prefix=row["prefix"], value_micros=row["value_micros"], group=row["group_name"],
        expires_at=row["expires_at"], note=row["note"], enabled=bool(row["enabled"]), created_at=row["created_at"],
        redeemed_by=row["redeemed_by"], redeemed_at=row["redeemed_at"],
    )  # fmt: skip
