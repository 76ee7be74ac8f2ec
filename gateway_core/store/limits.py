"""Rate-limit settings of groups (defaults), users (overrides) and API keys (caps).

Each subject has three columns: ``rpm`` (requests per minute), ``tpm`` (tokens
per minute) and ``concurrency`` (requests in flight). ``NULL`` means not set —
a user then gets the defaults of the group of the key it calls with, a key has
no cap of its own — and ``0`` means unlimited. Changes reach running gateways
through the key cache (within its one-second TTL, or at once through
``KeyCache.invalidate*`` in the process that made the change).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from ..records import BUDGET_COLUMNS, LIMIT_COLUMNS

LimitChanges = Mapping[str, int | None]  # column -> value (None: clear to "not set")

_TABLES = {"group": ('"groups"', "name"), "user": ("users", "id"), "key": ("api_keys", "id")}


def set_group_limits(conn: sqlite3.Connection, name: str, changes: LimitChanges) -> bool:
    """Change a group's default limits; ``False`` when there is no such group."""
    return _set(conn, "group", name, changes)


def set_user_limits(conn: sqlite3.Connection, user_id: int, changes: LimitChanges) -> bool:
    """Change a user's limit overrides; ``False`` when there is no such user."""
    return _set(conn, "user", user_id, changes)


def set_key_limits(conn: sqlite3.Connection, key_id: int, changes: LimitChanges) -> bool:
    """Change an API key's own limits; ``False`` when there is no such key."""
    return _set(conn, "key", key_id, changes)


def limit_columns(subject: str) -> tuple[str, ...]:
    """The limit columns of a ``"group"`` (rate limits), a ``"user"`` or a ``"key"`` (and budgets)."""
    return LIMIT_COLUMNS if subject == "group" else LIMIT_COLUMNS + BUDGET_COLUMNS


def get_limits(conn: sqlite3.Connection, subject: str, ident: str | int) -> dict[str, int | None] | None:
    """The stored limit columns of a ``"group"``, ``"user"`` or ``"key"`` (``None``: no such row)."""
    table, column = _TABLES[subject]
    columns = limit_columns(subject)
    row = conn.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE {column} = ?", (ident,)).fetchone()
    return dict(zip(columns, row)) if row is not None else None


def check_limit_changes(changes: LimitChanges, subject: str = "group") -> dict[str, int | None]:
    """Validated changes: known columns (budgets for users and keys), whole numbers >= 0 or ``None``."""
    known = limit_columns(subject)
    checked: dict[str, int | None] = {}
    for column, value in changes.items():
        if column not in known:
            raise ValueError(f"unknown limit {column!r} (known: {', '.join(known)})")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"the limit {column} must be a whole number >= 0 (0: unlimited), got {value!r}")
        checked[column] = value
    return checked


def _set(conn: sqlite3.Connection, subject: str, ident: str | int, changes: LimitChanges) -> bool:
    checked = check_limit_changes(changes, subject)
    table, column = _TABLES[subject]
    if not checked:
        return conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (ident,)).fetchone() is not None
    assignments = ", ".join(f"{name} = ?" for name in checked)
    cursor = conn.execute(f"UPDATE {table} SET {assignments} WHERE {column} = ?", (*checked.values(), ident))
    return cursor.rowcount > 0
