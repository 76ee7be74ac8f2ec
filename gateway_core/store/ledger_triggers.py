"""Migration ``0016_ledger_triggers_without_lists`` (SQLite only: PostgreSQL's
ledger checks its kinds with a ``CHECK`` constraint and counts budgets in its
own trigger function).

Every priced request inserts one ``capture`` row into the ledger, and two of the
ledger's triggers compared a value with a list (``NEW.kind NOT IN (…)``, ``subject
IN (…)``). SQLite evaluates such a list through an ephemeral b-tree that it
builds, and zeroes a page for, at each insert. Written as comparisons joined
by ``AND`` and as one statement per subject, the triggers do the same with no
temporary table. What they accept, refuse and count is unchanged.
"""

from __future__ import annotations

import sqlite_utils

from .billing_v2_schema import KEEP_BUCKET_HOURS, KINDS_0008


def kind_check(kinds: tuple[str, ...]) -> str:
    """``ledger_kind_check``: refuse a ledger row whose kind is not one of ``kinds``."""
    unknown = " AND ".join(f"NEW.kind <> '{kind}'" for kind in kinds)
    return f"CREATE TRIGGER ledger_kind_check BEFORE INSERT ON ledger WHEN {unknown} BEGIN SELECT RAISE(ABORT, 'ledger: unknown kind'); END"


# a capture (the ledger's negative amount) counted in its UTC hour's bucket, for its
# user and its key, and each subject's buckets past the longest window pruned
COUNT_CAPTURE = f"""
CREATE TRIGGER ledger_budget_buckets AFTER INSERT ON ledger
WHEN NEW.kind = 'capture' AND NEW.amount_micros < 0 AND NEW.created_at IS NOT NULL
BEGIN
    INSERT INTO budget_buckets (subject, hour, spent_micros)
    SELECT 'u:' || NEW.user_id, CAST(NEW.created_at / 3600 AS INTEGER), -NEW.amount_micros WHERE 1
    ON CONFLICT (subject, hour) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros;
    INSERT INTO budget_buckets (subject, hour, spent_micros)
    SELECT 'k:' || NEW.key_id, CAST(NEW.created_at / 3600 AS INTEGER), -NEW.amount_micros WHERE NEW.key_id IS NOT NULL
    ON CONFLICT (subject, hour) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros;
    DELETE FROM budget_buckets WHERE subject = 'u:' || NEW.user_id
    AND hour < CAST(NEW.created_at / 3600 AS INTEGER) - {KEEP_BUCKET_HOURS};
    DELETE FROM budget_buckets WHERE subject = 'k:' || NEW.key_id
    AND hour < CAST(NEW.created_at / 3600 AS INTEGER) - {KEEP_BUCKET_HOURS};
END
"""


def migrate_0016_ledger_triggers_without_lists(db: sqlite_utils.Database) -> None:
    db.execute("DROP TRIGGER ledger_kind_check")
    db.execute(kind_check(KINDS_0008))
    db.execute("DROP TRIGGER ledger_budget_buckets")
    db.execute(COUNT_CAPTURE)
