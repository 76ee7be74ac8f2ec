"""Migration ``0016_ledger_triggers_without_lists`` (SQLite): the ledger's
triggers accept, refuse and count as before, and a capture's insert no longer
builds a temporary b-tree for a list of values."""

from __future__ import annotations

import sqlite3
import time

import pytest

from gateway_core.billing.budgets import KEEP_HOURS, hour_of
from gateway_core.store import CORE_MIGRATIONS, Store
from gateway_core.store.wallet import MONEY_KINDS

MIGRATION = "0016_ledger_triggers_without_lists"
INSERT = (
    "INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, request_id, note, key_id, created_at) "
    "VALUES (?, ?, ?, 0, NULL, NULL, ?, ?)"
)


def database(path: str, *, until: str | None = None) -> sqlite3.Connection:
    Store(path, [m for m in CORE_MIGRATIONS if until is None or m[0] < until]).migrate()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def seed(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Two users, a key of the first; returns their ids."""
    users = [conn.execute("INSERT INTO users (name, created_at) VALUES (?, 0) RETURNING id", (name,)).fetchone()[0] for name in ("alice", "bob")]
    key = conn.execute(
        "INSERT INTO api_keys (user_id, name, key_hash, prefix, group_name, created_at) VALUES (?, 'ci', 'h', 'sk-', 'default', 0) RETURNING id",
        (users[0],),
    ).fetchone()[0]
    return users[0], users[1], key


def buckets(conn: sqlite3.Connection) -> dict[tuple[str, int], int]:
    return {(subject, hour): spent for subject, hour, spent in conn.execute("SELECT subject, hour, spent_micros FROM budget_buckets")}


def test_a_capture_counts_and_prunes_as_before(tmp_path):
    conn = database(str(tmp_path / "g.db"), until=MIGRATION)
    alice, bob, ci = seed(conn)
    now = time.time()
    old = now - (KEEP_HOURS + 5) * 3600
    conn.execute(INSERT, (alice, "capture", -40, ci, now - 60))
    for subject in (f"u:{alice}", f"k:{ci}", f"u:{bob}"):  # past the longest window
        conn.execute("INSERT INTO budget_buckets (subject, hour, spent_micros) VALUES (?, ?, 9)", (subject, hour_of(old)))
    before = buckets(conn)
    conn.close()

    conn = database(str(tmp_path / "g.db"))
    assert buckets(conn) == before  # the migration changes no row
    conn.execute(INSERT, (alice, "capture", -25, ci, now))
    conn.execute(INSERT, (bob, "capture", -5, None, now))  # no key: the user's bucket only
    conn.execute(INSERT, (alice, "refund", 7, ci, now))  # not a capture: not counted
    found = buckets(conn)
    this_hour, earlier = hour_of(now), hour_of(now - 60)
    assert (f"u:{alice}", hour_of(old)) not in found and (f"k:{ci}", hour_of(old)) not in found
    assert (f"u:{bob}", hour_of(old)) not in found  # bob's own capture pruned his
    assert found[(f"u:{bob}", this_hour)] == 5
    assert found[(f"k:{ci}", this_hour)] == 25 + (40 if earlier == this_hour else 0)
    assert found[(f"u:{alice}", this_hour)] == found[(f"k:{ci}", this_hour)]
    assert not any(subject.startswith("k:") and subject != f"k:{ci}" for subject, _ in found)


def test_kinds_are_checked_as_before(tmp_path):
    conn = database(str(tmp_path / "g.db"))
    alice, _, ci = seed(conn)
    for kind in MONEY_KINDS:
        conn.execute(INSERT, (alice, kind, 1, ci, time.time()))
    for kind in ("hold", "release", "Capture", ""):
        with pytest.raises(sqlite3.IntegrityError, match="ledger: unknown kind"):
            conn.execute(INSERT, (alice, kind, 1, ci, time.time()))
    assert conn.execute("SELECT count(*) FROM ledger").fetchone()[0] == len(MONEY_KINDS)


def test_a_capture_builds_no_temporary_b_tree(tmp_path):
    conn = database(str(tmp_path / "g.db"))
    alice, _, ci = seed(conn)
    program = [row[1] for row in conn.execute("EXPLAIN " + INSERT, (alice, "capture", -1, ci, time.time()))]
    assert "Program" in program  # the triggers' programs are part of it
    assert "OpenEphemeral" not in program
