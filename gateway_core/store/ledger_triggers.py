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

from typing import TYPE_CHECKING

from .billing_v2_schema import KEEP_BUCKET_HOURS, KINDS_0008, count_capture_trigger

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


def kind_check(kinds: tuple[str, ...]) -> str:
    """``ledger_kind_check``: refuse a ledger row whose kind is not one of ``kinds``."""
    unknown = " AND ".join(f"NEW.kind <> '{kind}'" for kind in kinds)
    return f"CREATE TRIGGER ledger_kind_check BEFORE INSERT ON ledger WHEN {unknown} BEGIN SELECT RAISE(ABORT, 'ledger: unknown kind'); END"


# each subject's buckets pruned by a statement of its own (a lookup of its primary key)
COUNT_CAPTURE = count_capture_trigger(
    "".join(
        f"    DELETE FROM budget_buckets WHERE subject = '{prefix}' || NEW.{column}\n"
        f"    AND hour < CAST(NEW.created_at / 3600 AS INTEGER) - {KEEP_BUCKET_HOURS};\n"
        for prefix, column in (("u:", "user_id"), ("k:", "key_id"))
    )
)


def migrate_0016_ledger_triggers_without_lists(db: sqlite_utils.Database) -> None:
    db.execute("DROP TRIGGER ledger_kind_check")
    db.execute(kind_check(KINDS_0008))
    db.execute("DROP TRIGGER ledger_budget_buckets")
    db.execute(COUNT_CAPTURE)
