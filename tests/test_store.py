"""The schema, its migrations and the domain functions (run on a plain connection)."""

import sqlite3
import threading
import time

import pytest

from gateway_core.admin.usage import page_cursor, parse_cursor
from gateway_core.records import ChannelRecord, KeyRecord, PriceRecord, UsageRow, UserRecord
from gateway_core.secrets import hash_key
from gateway_core.store import CORE_MIGRATIONS, Store, atomic, channels, groups, keys, prices, usage, users, wallet


@pytest.fixture
def store(tmp_path):
    store = Store(str(tmp_path / "data" / "relaygate.db"), CORE_MIGRATIONS)
    store.migrate()
    return store


@pytest.fixture
def conn(store):
    conn = store.connect()
    yield conn
    conn.close()


# --- connections and migrations ----------------------------------------------------


def test_connection_settings(store, conn):
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_migrate_creates_the_directory_and_records_each_migration(tmp_path):
    path = tmp_path / "deep" / "er" / "gw.db"
    store = Store(str(path), CORE_MIGRATIONS)
    core = [name for name, _ in CORE_MIGRATIONS]
    assert core[0] == "0001_core"
    assert store.migrate() == core
    assert path.exists()
    conn = store.connect()
    names = [row[0] for row in conn.execute("SELECT name FROM schema_migrations")]
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert names == core
    assert {"users", "groups", "user_groups", "api_keys", "channels", "prices", "ledger", "usage_logs"} <= tables


def test_migrate_is_idempotent(store):
    assert store.migrate() == []
    assert store.migrate() == []


def test_migrations_run_in_name_order_and_once(tmp_path):
    calls = []
    migrations = [
        ("0002_b", lambda db: calls.append("b")),
        ("0001_a", lambda db: calls.append("a")),
    ]
    store = Store(str(tmp_path / "x.db"), migrations)
    assert store.migrate() == ["0001_a", "0002_b"]
    assert calls == ["a", "b"]
    later = Store(str(tmp_path / "x.db"), migrations + [("0003_c", lambda db: calls.append("c"))])
    assert later.migrate() == ["0003_c"]
    assert calls == ["a", "b", "c"]


def test_a_failing_migration_rolls_back_and_is_not_recorded(tmp_path):
    def broken(schema):
        schema.execute("CREATE TABLE half (id INTEGER PRIMARY KEY)")
        raise RuntimeError("boom")

    store = Store(str(tmp_path / "x.db"), [("0001_broken", broken)])
    with pytest.raises(RuntimeError, match="boom"):
        store.migrate()
    conn = store.connect()
    assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone()[0] == 0
    conn.close()


def test_concurrent_migrations_apply_each_migration_once(tmp_path):
    path = str(tmp_path / "shared.db")
    runs = []
    lock = threading.Lock()

    def slow(schema):
        with lock:
            runs.append(threading.get_ident())
        time.sleep(0.05)  # widen the race
        schema.execute("CREATE TABLE extra (id INTEGER PRIMARY KEY)")

    migrations = CORE_MIGRATIONS + [("9999_extra", slow)]
    barrier = threading.Barrier(4)
    results, errors = [], []

    def start():
        barrier.wait()
        try:
            results.append(Store(path, migrations).migrate())  # each "process" its own store
        except Exception as exc:  # pragma: no cover - the assertion below shows it
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    applied = sorted(name for names in results for name in names)
    assert applied == sorted([name for name, _ in CORE_MIGRATIONS] + ["9999_extra"])
    assert len(runs) == 1


def test_default_group_is_seeded(conn):
    assert groups.group_ratios(conn) == {"default": 1_000_000}


# --- users and groups ------------------------------------------------------------------


def test_add_user_creates_missing_groups(conn):
    user_id = users.add_user(conn, "alice", groups=("default", "vip"))
    user = users.get_user(conn, "alice")
    assert user == UserRecord(user_id, "alice", False, True, 0, ("default", "vip"))
    assert groups.group_ratios(conn) == {"default": 1_000_000, "vip": 1_000_000}
    assert users.get_user(conn, "nobody") is None
    assert users.get_user_by_id(conn, user_id) == user


def test_add_user_rejects_duplicates(conn):
    users.add_user(conn, "alice")
    with pytest.raises(sqlite3.IntegrityError):
        users.add_user(conn, "alice")
    assert [u.name for u in users.list_users(conn)] == ["alice"]


@pytest.mark.parametrize("name", ["", "  ", " padded"])
def test_add_user_rejects_bad_names(conn, name):
    with pytest.raises(ValueError):
        users.add_user(conn, name)


def test_admins_and_passwords(conn):
    assert not users.has_admin(conn)
    users.add_user(conn, "root", is_admin=True, password_hash="scrypt$x")
    users.add_user(conn, "admin", is_admin=True)
    assert users.has_admin(conn)
    assert users.first_admin(conn).name == "admin"
    assert users.get_password_hash(conn, "root") == "scrypt$x"


def test_group_ratio(conn):
    groups.set_group_ratio(conn, "vip", 1_500_000)
    groups.set_group_ratio(conn, "vip", 2_000_000)
    assert groups.group_ratios(conn)["vip"] == 2_000_000
    with pytest.raises(ValueError):
        groups.set_group_ratio(conn, "a,b", 1)


# --- keys ----------------------------------------------------------------------------------


def test_create_and_find_key(conn):
    user_id = users.add_user(conn, "alice", groups=("default", "vip"))
    key_id, secret = keys.create_key(
        conn, user_id, name="ci", group="vip", quota_micros=5_000_000, expires_at=2e9,
        models=("m1", "m2"), allow_ips=("10.0.0.1", "192.168.0.0/16"),
    )  # fmt: skip
    assert secret.startswith("sk-")
    record = keys.find_key(conn, hash_key(secret))
    assert isinstance(record, KeyRecord)
    assert (record.id, record.name, record.user_id, record.user_name, record.group) == (key_id, "ci", user_id, "alice", "vip")
    assert record.user_enabled and record.enabled and not record.deleted
    assert record.quota_micros == 5_000_000 and record.used_micros == 0
    assert record.expires_at == 2e9
    assert record.models == ("m1", "m2")
    assert record.allow_ips == ("10.0.0.1/32", "192.168.0.0/16")
    assert secret.startswith(record.prefix.rstrip("…"))
    assert keys.get_key(conn, key_id) == record
    assert keys.find_key(conn, hash_key("sk-unknown")) is None
    stored = conn.execute("SELECT key_hash FROM api_keys").fetchone()[0]
    assert stored == hash_key(secret) and secret not in stored


def test_create_key_needs_an_open_group(conn):
    user_id = users.add_user(conn, "alice")
    groups.set_group_ratio(conn, "vip", 1_000_000)
    with pytest.raises(ValueError, match="group 'vip' is not open to user 'alice'"):
        keys.create_key(conn, user_id, name="k", group="vip")
    with pytest.raises(ValueError, match="no user"):
        keys.create_key(conn, 999, name="k", group="default")
    with pytest.raises(ValueError, match="CIDR"):
        keys.create_key(conn, user_id, name="k", group="default", allow_ips=["10.0.0.0/33"])
    assert keys.list_keys(conn, user_id) == []


def test_disable_enable_and_delete_keys(conn):
    user_id = users.add_user(conn, "alice")
    key_id, secret = keys.create_key(conn, user_id, name="k", group="default")
    other_id, _ = keys.create_key(conn, user_id, name="k2", group="default")
    assert keys.set_key_enabled(conn, key_id, False)
    assert not keys.find_key(conn, hash_key(secret)).enabled
    assert keys.set_key_enabled(conn, key_id, True)
    assert keys.delete_key(conn, key_id)
    found = keys.find_key(conn, hash_key(secret))
    assert found.deleted and not found.enabled  # still found, so the gateway can say "deleted"
    assert not keys.delete_key(conn, key_id)
    assert not keys.set_key_enabled(conn, key_id, True)  # deleted keys stay deleted
    assert not keys.set_key_enabled(conn, 999, True)
    assert [k.id for k in keys.list_keys(conn, user_id)] == [other_id]
    assert [k.id for k in keys.list_keys(conn, user_id, include_deleted=True)] == [key_id, other_id]


def test_touch_keys_never_moves_backwards(conn):
    user_id = users.add_user(conn, "alice")
    a, _ = keys.create_key(conn, user_id, name="a", group="default")
    b, _ = keys.create_key(conn, user_id, name="b", group="default")
    keys.touch_keys(conn, {a: 200.0, b: 100.0})
    keys.touch_keys(conn, {a: 150.0})
    assert keys.get_key(conn, a).last_used_at == 200.0
    assert keys.get_key(conn, b).last_used_at == 100.0


def test_key_user_disabled_is_visible(conn):
    user_id = users.add_user(conn, "alice")
    _, secret = keys.create_key(conn, user_id, name="a", group="default")
    users.set_user_enabled(conn, user_id, False)
    assert not keys.find_key(conn, hash_key(secret)).user_enabled


# --- channels and prices ---------------------------------------------------------------------


def test_channel_round_trip(conn):
    channel_id = channels.add_channel(
        conn, name="main", type="openai", base_url="https://api.example.com",
        api_keys=["sk-upstream-1", "sk-upstream-2"], models=["gpt-x"], model_map={"fast": "gpt-x-mini"},
        groups=["default", "vip"], priority=5, weight=3, endpoints=["chat"], headers={"X-Org": "o"},
        settings={"organization": "acme"},
    )  # fmt: skip
    record = channels.get_channel(conn, "main")
    assert record == ChannelRecord(
        id=channel_id, name="main", type="openai", base_url="https://api.example.com",
        api_keys=("sk-upstream-1", "sk-upstream-2"), models=("gpt-x",), model_map={"fast": "gpt-x-mini"},
        groups=("default", "vip"), priority=5, weight=3, enabled=True, endpoints=("chat",),
        headers={"X-Org": "o"}, settings={"organization": "acme"},
    )  # fmt: skip
    assert record.upstream_model("fast") == "gpt-x-mini"
    assert channels.list_channels(conn) == [record]
    assert channels.get_channel(conn, "other") is None
    with pytest.raises(sqlite3.IntegrityError):
        channels.add_channel(conn, name="main", type="openai", base_url="https://x")
    channels.set_channel_enabled(conn, "main", False)
    assert channels.list_channels(conn, enabled_only=True) == []
    assert channels.count_channels(conn) == 1


def test_prices(conn):
    record = prices.set_price(conn, "gpt-x", 2_500_000, 10_000_000, cached_input_micros_per_mtok=1_250_000)
    assert prices.get_price(conn, "gpt-x") == record
    assert record == PriceRecord("gpt-x", 2_500_000, 10_000_000, 1_250_000, None, False, record.updated_at)
    prices.set_price(conn, "gpt-x", 3_000_000, 12_000_000)
    assert prices.get_price(conn, "gpt-x").input_micros_per_mtok == 3_000_000
    prices.set_price(conn, "demo", 0, 0, free=True)
    assert [p.model for p in prices.list_prices(conn)] == ["demo", "gpt-x"]
    assert prices.get_price(conn, "demo").free
    assert prices.get_price(conn, "none") is None
    with pytest.raises(ValueError):
        prices.set_price(conn, "bad", 1.5, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        prices.set_price(conn, "bad", -1, 2)


# --- wallet --------------------------------------------------------------------------------------


def test_topup_writes_the_ledger(conn):
    user_id = users.add_user(conn, "alice")
    assert wallet.topup(conn, user_id, 10_000_000, "first") == 10_000_000
    assert wallet.topup(conn, user_id, 2_500_000, None) == 12_500_000
    assert users.get_user(conn, "alice").balance_micros == 12_500_000
    ledger = wallet.list_ledger(conn, user_id)
    assert [(row["kind"], row["amount_micros"], row["balance_after_micros"], row["note"]) for row in ledger] == [
        ("topup", 2_500_000, 12_500_000, None),
        ("topup", 10_000_000, 10_000_000, "first"),
    ]
    with pytest.raises(ValueError):
        wallet.topup(conn, user_id, 0)
    with pytest.raises(ValueError):
        wallet.topup(conn, user_id, -5)
    with pytest.raises(ValueError, match="no user"):
        wallet.topup(conn, 999, 5)
    assert len(wallet.list_ledger(conn, user_id)) == 2  # failed top-ups left no row


def test_ledger_is_append_only(conn):
    user_id = users.add_user(conn, "alice")
    wallet.topup(conn, user_id, 1_000_000)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE ledger SET amount_micros = 0")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM ledger")
    with pytest.raises(ValueError, match="unknown ledger kind"):
        wallet.adjust(conn, user_id, 5, kind="gift")


def test_hold_and_settle(conn):
    user_id = users.add_user(conn, "alice")
    key_id, _ = keys.create_key(conn, user_id, name="k", group="default")
    wallet.topup(conn, user_id, 1_000_000)
    with pytest.raises(wallet.HoldRefused) as refused:  # not enough: nothing changes
        wallet.hold(conn, user_id, 2_000_000, request_id="r1", key_id=key_id)
    assert (refused.value.what, refused.value.limit, refused.value.needed) == ("balance", 1_000_000, 2_000_000)
    assert wallet.get_balance(conn, user_id) == 1_000_000
    assert keys.get_key(conn, key_id).used_micros == 0
    assert wallet.hold(conn, user_id, 600_000, request_id="r1", key_id=key_id) == 400_000  # available
    # a reservation is no money moved: the balance and the ledger stay, the user's held amount grows
    assert wallet.get_balance(conn, user_id) == 1_000_000 and wallet.get_available(conn, user_id) == 400_000
    assert [row["kind"] for row in wallet.list_ledger(conn, user_id)] == ["topup"]
    with pytest.raises(wallet.HoldRefused) as refused:  # what is reserved cannot be reserved again
        wallet.hold(conn, user_id, 400_001, request_id="r9", key_id=key_id)
    assert (refused.value.what, refused.value.limit) == ("balance", 400_000)
    settled = wallet.settle(conn, user_id, request_id="r1", cost_micros=250_000, key_id=key_id)
    assert settled == wallet.Settlement(600_000, 250_000, 0, 750_000)
    assert wallet.get_available(conn, user_id) == 750_000
    assert keys.get_key(conn, key_id).used_micros == 250_000
    assert wallet.charge(conn, user_id, 1_000_000, request_id="r2") == -250_000
    ledger = [(row["kind"], row["amount_micros"], row["balance_after_micros"]) for row in reversed(wallet.list_ledger(conn, user_id))]
    assert ledger == [("topup", 1_000_000, 1_000_000), ("capture", -250_000, 750_000), ("capture", -1_000_000, -250_000)]
    assert wallet.settle(conn, user_id, request_id="r3", cost_micros=0).balance_micros == -250_000


def test_concurrent_topups_from_separate_connections_add_up(store):
    user_conn = store.connect()
    user_id = users.add_user(user_conn, "alice")
    user_conn.close()

    def work():
        conn = store.connect()
        for _ in range(25):
            wallet.topup(conn, user_id, 1)
        conn.close()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    conn = store.connect()
    assert wallet.get_balance(conn, user_id) == 100
    balances = sorted(row[0] for row in conn.execute("SELECT balance_after_micros FROM ledger"))
    assert balances == list(range(1, 101))  # every ledger row saw the balance it produced
    conn.close()


def test_atomic_rolls_back_its_block_only(conn):
    users.add_user(conn, "alice")
    with atomic(conn):
        users.add_user(conn, "bob")
        with pytest.raises(sqlite3.IntegrityError):
            with atomic(conn):
                conn.execute("INSERT INTO users (name, is_admin, enabled) VALUES ('carol', 0, 1)")
                users.add_user(conn, "alice")
    assert [u.name for u in users.list_users(conn)] == ["alice", "bob"]


# --- usage ---------------------------------------------------------------------------------------------


def _row(n, **fields):
    base = dict(request_id=f"req_{n}", started_at=1000.0 + n, protocol="openai", endpoint="chat")
    base.update(fields)
    return UsageRow(**base)


def test_insert_and_query_usage(conn):
    row = _row(
        1, user_id=1, key_id=7, key_name="ci", model="gpt-x", stream=True, input_tokens=10, output_tokens=20,
        cost_micros=123, estimated=True, status=200, attempts=[{"channel": "a", "status": 500}, {"channel": "b"}],
    )  # fmt: skip
    row_id = usage.insert_usage(conn, row)
    [stored] = usage.query_usage(conn)
    assert stored["id"] == row_id
    assert stored["request_id"] == "req_1" and stored["created_at"] == 1001.0
    assert stored["stream"] is True and stored["estimated"] is True
    assert stored["attempts"] == [{"channel": "a", "status": 500}, {"channel": "b"}]
    assert (stored["input_tokens"], stored["output_tokens"], stored["cost_micros"]) == (10, 20, 123)
    with pytest.raises(sqlite3.IntegrityError):
        usage.insert_usage(conn, _row(1))


def test_query_usage_filters_and_pages_newest_first(conn):
    for n in range(1, 31):
        usage.insert_usage(
            conn, _row(n, key_id=n % 2, model="a" if n % 3 else "b", status=200 if n % 5 else 500, user_id=n % 4)
        )
    pages, before = [], None
    while True:
        page = usage.query_usage(conn, limit=7, before=before)
        if not page:
            break
        pages.append([r["request_id"] for r in page])
        before = parse_cursor(page_cursor(page[-1]))
    assert [len(p) for p in pages] == [7, 7, 7, 7, 2]
    assert sum(pages, []) == [f"req_{n}" for n in range(30, 0, -1)]

    def ids(**filters):
        return [int(r["request_id"][4:]) for r in usage.query_usage(conn, limit=100, **filters)]

    assert ids(key_id=1) == [n for n in range(30, 0, -1) if n % 2 == 1]
    assert ids(model="b") == [30, 27, 24, 21, 18, 15, 12, 9, 6, 3]
    assert ids(status=500) == [30, 25, 20, 15, 10, 5]
    assert ids(user_id=0, status=500) == [20]
    assert ids(since=1025.0) == [30, 29, 28, 27, 26, 25]
    assert ids(since=1010.0, until=1013.0) == [12, 11, 10]
    assert ids(key_id=0, since=1010.0, until=1015.0) == [14, 12, 10]


def test_usage_queries_use_indexes(conn):
    for column, value in (("key_id", 1), ("model", "'a'"), ("status", 200), ("user_id", 1)):
        plan = " ".join(
            str(row[-1])
            for row in conn.execute(
                f"EXPLAIN QUERY PLAN SELECT * FROM usage_logs WHERE {column} = {value} AND created_at >= 5 "
                "AND created_at <= 9 AND (created_at < 9 OR id < 10) ORDER BY created_at DESC, id DESC LIMIT 50"
            )
        )
        assert f"idx_usage_logs_{column}_created_at" in plan and "TEMP B-TREE" not in plan, plan
    plan = " ".join(str(row[-1]) for row in conn.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM usage_logs WHERE created_at >= 5 ORDER BY created_at DESC, id DESC LIMIT 50"
    ))  # fmt: skip
    assert "idx_usage_logs_created_at" in plan and "TEMP B-TREE" not in plan, plan
