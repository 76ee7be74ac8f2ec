"""Migrations ``0008_billing_v2`` and ``0009_billing_budgets`` (the same names on PostgreSQL,
:data:`gateway_core.store.postgres.schema_billing_v2.BILLING_V2`):

- reservations carry the process that made them (``holds.owner``), and
  ``hold_owners`` keeps each process's replica, pid and lease: a process renews
  its lease while it runs; the holds of one whose lease ran out (or that a
  restarted gateway on the same replica finds gone) are released;
- ``api_keys.locks``: the limits of a key its operator set (a JSON object of
  field names to the operator's values), which the key's owner cannot loosen;
- ``redemption_codes``: codes credited to a wallet once, stored as hashes, and
  the ``redemption`` ledger kind.
"""

from __future__ import annotations

import sqlite_utils

# the ledger's kinds once this migration ran: money that moved (0006: no more hold
# or release rows) and ``redemption``
KINDS_0008 = ("topup", "capture", "refund", "adjustment", "redemption")


def migrate_0008_billing_v2(db: sqlite_utils.Database) -> None:
    db.execute("ALTER TABLE holds ADD COLUMN owner TEXT")
    db.execute("CREATE INDEX idx_holds_owner ON holds (owner)")
    db.execute(
        "CREATE TABLE hold_owners (id TEXT PRIMARY KEY, replica TEXT NOT NULL, pid INTEGER NOT NULL, "
        "started_at FLOAT NOT NULL, lease_until FLOAT NOT NULL)"
    )
    db.execute("ALTER TABLE api_keys ADD COLUMN locks TEXT NOT NULL DEFAULT '{}'")
    db.execute(
        "CREATE TABLE redemption_codes ("
        "id INTEGER PRIMARY KEY, batch TEXT NOT NULL, code_hash TEXT NOT NULL, prefix TEXT NOT NULL, "
        "value_micros INTEGER NOT NULL, group_name TEXT REFERENCES groups (name), expires_at FLOAT, note TEXT, "
        "enabled INTEGER NOT NULL DEFAULT 1, created_at FLOAT NOT NULL, "
        "redeemed_by INTEGER REFERENCES users (id), redeemed_at FLOAT)"
    )
    db.execute("CREATE UNIQUE INDEX idx_redemption_codes_code_hash ON redemption_codes (code_hash)")
    db.execute("CREATE INDEX idx_redemption_codes_batch ON redemption_codes (batch)")
    kinds = ", ".join(f"'{kind}'" for kind in KINDS_0008)
    db.execute("DROP TRIGGER ledger_kind_check")
    db.execute(
        "CREATE TRIGGER ledger_kind_check BEFORE INSERT ON ledger "
        f"WHEN NEW.kind NOT IN ({kinds}) "
        "BEGIN SELECT RAISE(ABORT, 'ledger: unknown kind'); END"
    )


BUDGET_PERIODS = ("daily", "weekly", "monthly")


def migrate_0009_billing_budgets(db: sqlite_utils.Database) -> None:
    """Spending caps per day, week and month on keys and users (``NULL``: none), and
    what each capped key or user has spent in its current window (``budget_spend``:
    ``subject`` is ``k:ID`` or ``u:ID``, ``period`` one of :data:`BUDGET_PERIODS`)."""
    for table in ("api_keys", "users"):
        for period in BUDGET_PERIODS:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {period}_budget_micros INTEGER")
    db.execute(
        "CREATE TABLE budget_spend (subject TEXT NOT NULL, period TEXT NOT NULL, window_start FLOAT NOT NULL, "
        "spent_micros INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (subject, period))"
    )


PRICE_V2_COLUMNS = (
    "per_request_micros", "reasoning_micros_per_mtok", "cache_write_1h_micros_per_mtok",
    "tier_threshold_tokens", "tier_input_micros_per_mtok", "tier_output_micros_per_mtok",
)  # fmt: skip


def migrate_0010_billing_prices(db: sqlite_utils.Database) -> None:
    """Prices per request, for reasoning, for hour-long cache writes, and a tier above
    an input-token threshold; a key's opt-in to the cost header; the cost's breakdown
    on each usage row (``cost_detail``, JSON)."""
    for column in PRICE_V2_COLUMNS:
        db.execute(f"ALTER TABLE prices ADD COLUMN {column} INTEGER")
    db.execute("ALTER TABLE api_keys ADD COLUMN cost_header INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE usage_logs ADD COLUMN cost_detail TEXT")

