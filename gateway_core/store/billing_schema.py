"""Migration ``0003_billing``: reservations, key charges in the ledger, non-token
prices, and usage-log indexes for newest-first pages at ten million rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


# The usage log is read newest first, ``ORDER BY created_at DESC, id DESC``,
# filtered by one of these columns (or none) and a time range: one index per
# filter, ending with ``created_at`` (SQLite appends the rowid ``id``), answers
# every such page with a bounded index range scan and no sort.
USAGE_FILTERS = ("key_id", "model", "status", "user_id")
_OLD_USAGE_INDEXES = (
    "idx_usage_logs_key_id_id",
    "idx_usage_logs_model_id",
    "idx_usage_logs_status_id",
    "idx_usage_logs_user_id_id",
)


def migrate_0003_billing(db: sqlite_utils.Database) -> None:
    # prices of calls that are not token-priced (endpoints come later)
    for column in ("per_image_micros", "per_mchar_micros", "per_audio_minute_micros"):
        db.table("prices").add_column(column, int)

    # what requests in flight have reserved against each key's quota
    db.execute("ALTER TABLE api_keys ADD COLUMN held_micros INTEGER NOT NULL DEFAULT 0")

    # the key a ledger row concerns: a key's used amount is the sum of its charges
    db.table("ledger").add_column("key_id", int)

    # open reservations: one row per request holding money, removed when settled
    db.table("holds").create(
        {
            "request_id": str,
            "user_id": int,
            "key_id": int,
            "amount_micros": int,
            "created_at": float,
        },
        pk="request_id",
        not_null={"user_id", "amount_micros", "created_at"},
    )
    db.table("holds").create_index(["created_at"])
    db.table("holds").create_index(["user_id"])

    usage = db.table("usage_logs")
    db.execute("ALTER TABLE usage_logs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE usage_logs ADD COLUMN held_micros INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE usage_logs ADD COLUMN overrun_micros INTEGER NOT NULL DEFAULT 0")
    for name in _OLD_USAGE_INDEXES:
        db.execute(f"DROP INDEX IF EXISTS {name}")
    for column in USAGE_FILTERS:
        usage.create_index([column, "created_at"])
    # unfiltered pages use 0001's index on created_at
