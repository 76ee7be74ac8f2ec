"""Personal access tokens, the audit log and idempotent credits, on SQLite.

The domain functions over the tables of :mod:`.access_schema`. The SQL strings are shared
with PostgreSQL (``?`` placeholders, numbered there).

- A token is ``rgt-`` and 32 random bytes, stored only as its SHA-256 (like
  an API key: high-entropy, so a fast hash is enough).
- An audit row keeps the record before and after the change as JSON text.
- A credit given an idempotency key records the key in ``idempotency_keys``
  in the same transaction as the balance change and its ledger row: the same
  key again returns the first credit and moves nothing.
"""

from __future__ import annotations

import secrets as _random
import sqlite3
import time
from typing import Any

import orjson

from ..admin.errors import Conflict
from .access_records import TOKEN_PREFIX, AccessTokenRecord, AuditEntry, Credit
from ..secrets import DISPLAY_CHARS, hash_key
from .access_schema import check_scope
from .connection import atomic, fetch_all, fetch_one, inserted_id
from .usage import usage_dict
from .wallet import adjust

TOKEN_BYTES = 32

TOKEN_SELECT = (
    "SELECT t.id, t.user_id, u.name AS user_name, t.name, t.scope, t.prefix, t.created_at, t.expires_at, "
    "t.revoked_at, t.last_used_at, u.enabled AS user_enabled, u.is_admin AS user_is_admin "
    "FROM access_tokens AS t JOIN users AS u ON u.id = t.user_id"
)
TOKEN_INSERT = (
    "INSERT INTO access_tokens (user_id, name, token_hash, prefix, scope, created_at, expires_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
TOKEN_TOUCH = "UPDATE access_tokens SET last_used_at = ? WHERE id = ?"
TOKEN_REVOKE = "UPDATE access_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"
AUDIT_INSERT = (
    "INSERT INTO audit_log (created_at, via, user_id, user_name, token_id, request_id, action, target, before_json, after_json) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
AUDIT_SELECT = (
    "SELECT id, created_at, via, user_id, user_name, token_id, request_id, action, target, before_json, after_json "
    "FROM audit_log WHERE (? IS NULL OR id < ?) AND (? IS NULL OR target = ?) ORDER BY id DESC LIMIT ?"
)
IDEMPOTENT_SELECT = (
    "SELECT i.key AS idempotency_key, i.user_id, i.kind, i.amount_micros, i.note, i.ledger_id, "
    "l.balance_after_micros, l.created_at FROM idempotency_keys AS i JOIN ledger AS l ON l.id = i.ledger_id WHERE i.key = ?"
)
IDEMPOTENT_INSERT = (
    "INSERT INTO idempotency_keys (key, user_id, kind, amount_micros, note, ledger_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
FIND_REQUEST = "SELECT * FROM usage_logs WHERE request_id = ?"
SET_ADMIN = "UPDATE users SET is_admin = ? WHERE id = ?"

# --- tokens ------------------------------------------------------------------------


def new_token() -> str:
    return TOKEN_PREFIX + _random.token_urlsafe(TOKEN_BYTES)


def token_prefix(secret: str) -> str:
    return secret[: len(TOKEN_PREFIX) + DISPLAY_CHARS] + "…"


def token_values(user_id: int, name: str, scope: str, expires_at: float | None) -> tuple[str, tuple[Any, ...]]:
    """A new token's secret and the values of :data:`TOKEN_INSERT`."""
    secret = new_token()
    values = (user_id, name, hash_key(secret), token_prefix(secret), check_scope(scope), time.time(), expires_at)
    return secret, values


def token_record(row: Any) -> AccessTokenRecord:
    return AccessTokenRecord(
        id=row["id"], user_id=row["user_id"], user_name=row["user_name"], name=row["name"], scope=row["scope"],
        prefix=row["prefix"], created_at=row["created_at"], expires_at=row["expires_at"], revoked_at=row["revoked_at"],
        last_used_at=row["last_used_at"], user_enabled=bool(row["user_enabled"]), user_is_admin=bool(row["user_is_admin"]),
    )  # fmt: skip


def create_token(conn: sqlite3.Connection, user_id: int, name: str, scope: str, expires_at: float | None) -> tuple[AccessTokenRecord, str]:
    secret, values = token_values(user_id, name, scope, expires_at)
    with atomic(conn):
        if conn.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone() is None:
            raise ValueError(f"no user with id {user_id}")
        token_id = inserted_id(conn.execute(TOKEN_INSERT, values))
    record = get_token(conn, token_id)
    assert record is not None
    return record, secret


def get_token(conn: sqlite3.Connection, token_id: int) -> AccessTokenRecord | None:
    row = fetch_one(conn, f"{TOKEN_SELECT} WHERE t.id = ?", (token_id,))
    return token_record(row) if row else None


def find_token(conn: sqlite3.Connection, token_hash: str) -> AccessTokenRecord | None:
    row = fetch_one(conn, f"{TOKEN_SELECT} WHERE t.token_hash = ?", (token_hash,))
    return token_record(row) if row else None


def list_tokens(conn: sqlite3.Connection, user_id: int | None) -> list[AccessTokenRecord]:
    rows = fetch_all(conn, f"{TOKEN_SELECT} WHERE ? IS NULL OR t.user_id = ? ORDER BY t.id", (user_id, user_id))
    return [token_record(row) for row in rows]


def touch_token(conn: sqlite3.Connection, token_id: int, used_at: float) -> None:
    conn.execute(TOKEN_TOUCH, (used_at, token_id))


def revoke_token(conn: sqlite3.Connection, token_id: int) -> bool:
    return conn.execute(TOKEN_REVOKE, (time.time(), token_id)).rowcount > 0


def set_user_admin(conn: sqlite3.Connection, user_id: int, is_admin: bool) -> bool:
    return conn.execute(SET_ADMIN, (int(is_admin), user_id)).rowcount > 0


# --- the audit log -------------------------------------------------------------------


def audit_values(entry: AuditEntry) -> tuple[Any, ...]:
    return (
        entry.created_at, entry.via, entry.user_id, entry.user_name, entry.token_id, entry.request_id, entry.action,
        entry.target, _json(entry.before), _json(entry.after),
    )  # fmt: skip


def audit_entry(row: Any) -> AuditEntry:
    fields = {name: row[name] for name in ("id", "created_at", "via", "user_id", "user_name", "token_id", "request_id", "action", "target")}
    return AuditEntry(**fields, before=_unjson(row["before_json"]), after=_unjson(row["after_json"]))


def record_audit(conn: sqlite3.Connection, entry: AuditEntry) -> int:
    return inserted_id(conn.execute(AUDIT_INSERT, audit_values(entry)))


def list_audit(conn: sqlite3.Connection, before_id: int | None, limit: int, target: str | None) -> list[AuditEntry]:
    rows = fetch_all(conn, AUDIT_SELECT, (before_id, before_id, target, target, limit))
    return [audit_entry(row) for row in rows]


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _unjson(text: str | None) -> dict[str, Any] | None:
    return None if text is None else orjson.loads(text)


# --- credits ---------------------------------------------------------------------------


def credit_record(row: Any, *, replayed: bool) -> Credit:
    return Credit(
        ledger_id=row["ledger_id"], user_id=row["user_id"], kind=row["kind"], amount_micros=row["amount_micros"],
        balance_after_micros=row["balance_after_micros"], note=row["note"], idempotency_key=row["idempotency_key"],
        created_at=row["created_at"], replayed=replayed,
    )  # fmt: skip


def check_replay(credit: Credit, user_id: int, kind: str, amount: int) -> Credit:
    """The earlier credit under the same key, when it asked for the same thing."""
    if (credit.user_id, credit.kind, credit.amount_micros) != (user_id, kind, amount):
        raise KeyReused(
            f"the idempotency key {credit.idempotency_key!r} was used for another {credit.kind} "
            f"(user {credit.user_id}, {credit.amount_micros} micro-USD)"
        )
    return credit


class KeyReused(Conflict):
    """An idempotency key sent again with a different request."""


def credit(
    conn: sqlite3.Connection, user_id: int, amount: int, kind: str, note: str | None, idempotency_key: str | None
) -> Credit:
    """A top-up or adjustment with its ledger row, once per idempotency key."""
    with atomic(conn):
        if idempotency_key is not None:
            earlier = fetch_one(conn, IDEMPOTENT_SELECT, (idempotency_key,))
            if earlier is not None:
                return check_replay(credit_record(earlier, replayed=True), user_id, kind, amount)
        balance = adjust(conn, user_id, amount, kind=kind, note=note)
        ledger_id, created_at = conn.execute(
            "SELECT id, created_at FROM ledger WHERE user_id = ? ORDER BY id DESC LIMIT 1", (user_id,)
        ).fetchone()
        if idempotency_key is not None:
            conn.execute(IDEMPOTENT_INSERT, (idempotency_key, user_id, kind, amount, note, ledger_id, time.time()))
    return Credit(ledger_id, user_id, kind, amount, balance, note, idempotency_key, created_at)


def find_request(conn: sqlite3.Connection, request_id: str) -> dict[str, Any] | None:
    row = fetch_one(conn, FIND_REQUEST, (request_id,))
    return usage_dict(row) if row is not None else None
