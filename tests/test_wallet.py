"""Reservations and settlements in the store: balance and key quota together,
all or nothing, exactly once, with an append-only ledger of money that moved
the audit can verify."""

import sqlite3
import threading

import pytest

from gateway_core.records import UsageRow
from gateway_core.store.requests import record_request
from gateway_core.store import CORE_MIGRATIONS, Store, atomic, keys, users, wallet
from gateway_core.store.audit import audit


@pytest.fixture
def store(tmp_path):
    store = Store(str(tmp_path / "gw.db"), CORE_MIGRATIONS)
    store.migrate()
    return store


@pytest.fixture
def conn(store):
    conn = store.connect()
    yield conn
    conn.close()


@pytest.fixture
def alice(conn):
    user_id = users.add_user(conn, "alice")
    wallet.topup(conn, user_id, 10_000_000)
    return user_id


def key(conn, user_id, quota=None):
    return keys.create_key(conn, user_id, name="k", group="default", quota_micros=quota)[0]


def state(conn, user_id, key_id):
    """(available balance, key used, key held, ledger rows)"""
    k = keys.get_key(conn, key_id)
    held = conn.execute("SELECT held_micros FROM api_keys WHERE id = ?", (key_id,)).fetchone()[0]
    ledger = conn.execute("SELECT count(*) FROM ledger").fetchone()[0]
    return wallet.get_available(conn, user_id), k.used_micros, held, ledger


def test_a_hold_the_key_quota_cannot_cover_changes_nothing_and_says_why(conn, alice):
    key_id = key(conn, alice, quota=1_000_000)
    wallet.hold(conn, alice, 700_000, request_id="r1", key_id=key_id)
    wallet.settle(conn, alice, request_id="r1", cost_micros=700_000, key_id=key_id)  # used 0.70 of 1.00
    wallet.hold(conn, alice, 200_000, request_id="r2", key_id=key_id)  # 0.20 held
    before = state(conn, alice, key_id)
    with pytest.raises(wallet.HoldRefused) as refused:
        wallet.hold(conn, alice, 200_000, request_id="r3", key_id=key_id)
    assert (refused.value.what, refused.value.used, refused.value.held, refused.value.limit) == ("key_quota", 700_000, 200_000, 1_000_000)
    assert state(conn, alice, key_id) == before
    assert wallet.hold(conn, alice, 100_000, request_id="r3", key_id=key_id) == 10_000_000 - 700_000 - 200_000 - 100_000
    assert audit(conn).ok


def test_a_hold_the_balance_cannot_cover_leaves_the_key_untouched(conn):
    user_id = users.add_user(conn, "bob")
    wallet.topup(conn, user_id, 500)
    key_id = key(conn, user_id, quota=10_000)
    before = state(conn, user_id, key_id)
    with pytest.raises(wallet.HoldRefused) as refused:
        wallet.hold(conn, user_id, 501, request_id="r1", key_id=key_id)
    assert (refused.value.what, refused.value.limit, refused.value.needed) == ("balance", 500, 501)
    assert state(conn, user_id, key_id) == before  # the key's reservation was rolled back with it
    assert wallet.hold(conn, user_id, 500, request_id="r1", key_id=key_id) == 0
    assert audit(conn).ok


def test_settle_releases_the_hold_and_captures_the_cost(conn, alice):
    key_id = key(conn, alice)
    wallet.hold(conn, alice, 300_000, request_id="r1", key_id=key_id)
    done = wallet.settle(conn, alice, request_id="r1", cost_micros=120_000, key_id=key_id, used_at=123.0)
    assert done == wallet.Settlement(300_000, 120_000, 0, 10_000_000 - 120_000)
    assert state(conn, alice, key_id) == (9_880_000, 120_000, 0, 2)
    assert keys.get_key(conn, key_id).last_used_at == 123.0
    rows = [(r["kind"], r["amount_micros"], r["balance_after_micros"], r["request_id"], r["key_id"]) for r in wallet.list_ledger(conn, alice)]
    assert rows == [  # money that moved only: the reservation never reached the ledger
        ("capture", -120_000, 9_880_000, "r1", key_id),
        ("topup", 10_000_000, 10_000_000, None, None),
    ]
    assert wallet.list_holds(conn) == []
    assert audit(conn).ok


def test_a_cost_above_the_reservation_is_charged_in_full_and_reported_as_overrun(conn):
    user_id = users.add_user(conn, "bob")
    wallet.topup(conn, user_id, 1_000)
    key_id = key(conn, user_id, quota=1_000)
    wallet.hold(conn, user_id, 1_000, request_id="r1", key_id=key_id)
    done = wallet.settle(conn, user_id, request_id="r1", cost_micros=1_250, key_id=key_id)
    assert (done.overrun_micros, done.balance_micros) == (250, -250)
    assert keys.get_key(conn, key_id).used_micros == 1_250  # the key went over its quota by the overrun too
    assert audit(conn).ok


def test_an_error_before_output_releases_everything(conn, alice):
    key_id = key(conn, alice)
    wallet.hold(conn, alice, 300_000, request_id="r1", key_id=key_id)
    assert wallet.settle(conn, alice, request_id="r1", cost_micros=0, key_id=key_id).balance_micros == 10_000_000
    assert [r["kind"] for r in wallet.list_ledger(conn, alice)] == ["topup"]  # nothing moved, nothing written
    assert state(conn, alice, key_id)[:3] == (10_000_000, 0, 0)


def test_stale_holds_are_released_once_and_a_late_settle_still_captures(conn, alice):
    key_id = key(conn, alice)
    wallet.hold(conn, alice, 300_000, request_id="r1", key_id=key_id)
    wallet.hold(conn, alice, 100_000, request_id="r2", key_id=key_id)
    assert wallet.release_stale_holds(conn, older_than=0) == 0  # none that old
    assert wallet.release_stale_holds(conn, older_than=2e9) == 2
    assert wallet.release_stale_holds(conn, older_than=2e9) == 0  # never twice
    assert state(conn, alice, key_id)[:3] == (10_000_000, 0, 0)
    assert [r["kind"] for r in wallet.list_ledger(conn, alice)] == ["topup"]  # a release moves no money
    late = wallet.settle(conn, alice, request_id="r1", cost_micros=50_000, key_id=key_id)
    assert (late.released_micros, late.overrun_micros, late.balance_micros) == (0, 50_000, 9_950_000)
    assert audit(conn).ok


def _usage(request_id, user_id, key_id, cost):
    return UsageRow(request_id=request_id, started_at=1.0, protocol="openai", endpoint="chat", user_id=user_id, key_id=key_id, cost_micros=cost)


def test_recording_a_request_twice_never_charges_twice(store, conn, alice):
    key_id = key(conn, alice)
    wallet.hold(conn, alice, 300_000, request_id="r1", key_id=key_id)
    with atomic(conn):  # as the writer runs it: in its own savepoint
        record_request(conn, _usage("r1", alice, key_id, 100_000), alice)
    before = state(conn, alice, key_id)
    with pytest.raises(sqlite3.IntegrityError):
        with atomic(conn):
            record_request(conn, _usage("r1", alice, key_id, 100_000), alice)
    assert state(conn, alice, key_id) == before
    row = conn.execute("SELECT cost_micros, overrun_micros FROM usage_logs WHERE request_id = 'r1'").fetchone()
    assert row == (100_000, 0)
    assert audit(conn).ok


def test_the_audit_finds_each_broken_invariant(conn, alice):
    key_id = key(conn, alice)
    wallet.hold(conn, alice, 300_000, request_id="r1", key_id=key_id)
    wallet.hold(conn, alice, 200_000, request_id="r2", key_id=key_id)
    wallet.settle(conn, alice, request_id="r2", cost_micros=150_000, key_id=key_id)
    report = audit(conn)
    assert report.ok and (report.open_holds, report.held_micros, report.users, report.keys) == (1, 300_000, 1, 1)
    conn.execute("UPDATE users SET balance_micros = balance_micros + 1")
    conn.execute("UPDATE api_keys SET used_micros = used_micros + 2")
    conn.execute("DELETE FROM holds")
    found = {(p.check, p.expected, p.found) for p in audit(conn).problems}
    assert found == {
        ("balance", 10_000_000 - 150_000, 10_000_000 - 150_000 + 1),
        ("key_used", 150_000, 150_002),
        ("key_held", 0, 300_000),
        ("holds", 0, 300_000),
    }


def test_the_audit_finds_a_broken_chain(conn, alice):
    conn.execute("DROP TRIGGER ledger_append_only_update")  # only a test may do this
    conn.execute("UPDATE ledger SET balance_after_micros = 5 WHERE id = 1")
    assert {p.check for p in audit(conn).problems} == {"chain"}


def test_concurrent_holds_from_several_connections_never_overdraw(store):
    """Like several worker processes: each thread has its own connection."""
    conn = store.connect()
    user_id = users.add_user(conn, "carol")
    wallet.topup(conn, user_id, 1_000)
    key_id = key(conn, user_id)
    admitted, refused = [], []

    def work(worker):
        own = store.connect()
        for n in range(25):
            request_id = f"w{worker}-{n}"
            try:
                wallet.hold(own, user_id, 30, request_id=request_id, key_id=key_id)
            except wallet.HoldRefused:
                refused.append(request_id)
                continue
            admitted.append(request_id)
            if n % 2:
                wallet.settle(own, user_id, request_id=request_id, cost_micros=20, key_id=key_id)
        own.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert admitted and refused and len(admitted) + len(refused) == 100
    lowest = conn.execute("SELECT min(balance_after_micros) FROM ledger WHERE user_id = ?", (user_id,)).fetchone()[0]
    assert lowest >= 0
    assert audit(conn).ok
    conn.close()


def test_the_billing_migration_upgrades_a_database_in_use(tmp_path):
    path = str(tmp_path / "old.db")
    before = [m for m in CORE_MIGRATIONS if m[0] < "0003"]
    old = Store(path, before)
    old.migrate()
    conn = old.connect()
    user_id = users.add_user(conn, "alice")
    conn.execute(
        "INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, created_at) VALUES (?, 'topup', 5, 5, 1)",
        (user_id,),
    )
    conn.execute("UPDATE users SET balance_micros = 5")
    conn.execute("INSERT INTO api_keys (user_id, name, key_hash, prefix, group_name, used_micros, enabled, deleted) VALUES (?, 'k', 'h', 'sk-', 'default', 0, 1, 0)", (user_id,))
    conn.execute("INSERT INTO usage_logs (request_id, created_at, key_id, status) VALUES ('r1', 1.0, 1, 200)")
    conn.close()
    assert Store(path, CORE_MIGRATIONS).migrate()[0] == "0003_billing"  # then any later ones
    conn = Store(path, CORE_MIGRATIONS).connect()
    assert conn.execute("SELECT held_micros FROM api_keys").fetchone() == (0,)
    assert conn.execute("SELECT held_micros, overrun_micros, cache_write_tokens FROM usage_logs").fetchone() == (0, 0, 0)
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage_logs'")}
    assert "idx_usage_logs_key_id_created_at" in names and "idx_usage_logs_key_id_id" not in names
    assert audit(conn).ok
    conn.close()
