"""Migrations ``0008_billing_v2`` and ``0009_billing_budgets`` (the same names on PostgreSQL,
:data:`relaygate_postgres.schema_billing_v2.BILLING_V2`):

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

from typing import TYPE_CHECKING

import time

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
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



KEEP_BUCKET_HOURS = 32 * 24  # as gateway_core.billing.budgets.KEEP_HOURS (the schema does not import the billing package)

def count_capture_trigger(prune: str) -> str:
    """``ledger_budget_buckets``: a capture (the ledger's negative amount) counted in
    its UTC hour's bucket, for its user and its key, then ``prune`` (statements
    dropping the subjects' buckets past the longest window)."""
    return f"""
CREATE TRIGGER ledger_budget_buckets AFTER INSERT ON ledger
WHEN NEW.kind = 'capture' AND NEW.amount_micros < 0 AND NEW.created_at IS NOT NULL
BEGIN
    INSERT INTO budget_buckets (subject, hour, spent_micros)
    SELECT 'u:' || NEW.user_id, CAST(NEW.created_at / 3600 AS INTEGER), -NEW.amount_micros WHERE 1
    ON CONFLICT (subject, hour) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros;
    INSERT INTO budget_buckets (subject, hour, spent_micros)
    SELECT 'k:' || NEW.key_id, CAST(NEW.created_at / 3600 AS INTEGER), -NEW.amount_micros WHERE NEW.key_id IS NOT NULL
    ON CONFLICT (subject, hour) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros;
{prune}END
"""


# as 0014 wrote it: both subjects pruned by one statement (0016 writes one per subject)
_COUNT_CAPTURE = count_capture_trigger(
    "    DELETE FROM budget_buckets WHERE subject IN ('u:' || NEW.user_id, 'k:' || NEW.key_id)\n"
    f"    AND hour < CAST(NEW.created_at / 3600 AS INTEGER) - {KEEP_BUCKET_HOURS};\n"
)
# ?1: the first hour to keep; the captures since then, per subject and hour
_BACKFILL = (
    "INSERT INTO budget_buckets (subject, hour, spent_micros) "
    "SELECT subject, hour, sum(spent) FROM ("
    "SELECT 'u:' || user_id AS subject, CAST(created_at / 3600 AS INTEGER) AS hour, -amount_micros AS spent FROM ledger "
    "WHERE kind = 'capture' AND amount_micros < 0 AND created_at >= ?1 * 3600 "
    "UNION ALL SELECT 'k:' || key_id, CAST(created_at / 3600 AS INTEGER), -amount_micros FROM ledger "
    "WHERE kind = 'capture' AND amount_micros < 0 AND key_id IS NOT NULL AND created_at >= ?1 * 3600"
    ") GROUP BY subject, hour"
)


def migrate_0014_budget_buckets(db: sqlite_utils.Database) -> None:
    """Budgets count hourly buckets of captured cost plus open reservations
    (:mod:`gateway_core.billing.budgets`) instead of a counter per window:
    ``budget_buckets`` (``subject`` ``k:ID`` or ``u:ID``, ``hour`` since the epoch,
    UTC), filled by a trigger on the ledger's captures in their own transaction and
    from the last 32 days of captures here; ``budget_spend`` goes."""
    db.execute(
        "CREATE TABLE budget_buckets (subject TEXT NOT NULL, hour INTEGER NOT NULL, spent_micros INTEGER NOT NULL, "
        "PRIMARY KEY (subject, hour))"
    )
    db.execute("CREATE INDEX idx_holds_key_id ON holds (key_id)")
    db.execute(_BACKFILL, (int(time.time() // 3600) - KEEP_BUCKET_HOURS,))
    db.execute(_COUNT_CAPTURE)
    db.execute("DROP TABLE budget_spend")
