"""Migration ``0015_holds_in_flight`` (the same name on PostgreSQL,
:data:`relaygate_postgres.schema.HOLDS_IN_FLIGHT`).

``holds`` has one row per request in flight: every priced request writes its
row and deletes it again, so each index on it costs a b-tree write twice per
request, for a table that holds a few hundred rows at most. The indexes only
the periodic sweeps read (``created_at``: stale reservations; ``owner``: the
holds of a process whose lease ran out) go: a sweep scans the table. The ones
a request may read (a budget sums its user's or key's holds) stay. On SQLite
the table becomes ``WITHOUT ROWID``: the row lives in its primary key's b-tree
instead of a table and an index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


def migrate_0015_holds_in_flight(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE holds_in_flight (request_id TEXT PRIMARY KEY, user_id INTEGER NOT NULL, key_id INTEGER, "
        "amount_micros INTEGER NOT NULL, created_at REAL NOT NULL, owner TEXT) WITHOUT ROWID"
    )
    db.execute(
        "INSERT INTO holds_in_flight (request_id, user_id, key_id, amount_micros, created_at, owner) "
        "SELECT request_id, user_id, key_id, amount_micros, created_at, owner FROM holds"
    )
    db.execute("DROP TABLE holds")
    db.execute("ALTER TABLE holds_in_flight RENAME TO holds")
    db.execute("CREATE INDEX idx_holds_user_id ON holds (user_id)")
    db.execute("CREATE INDEX idx_holds_key_id ON holds (key_id)")
