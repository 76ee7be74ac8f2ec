"""The usage log's newest-first pages: every filter is one index range scan with no
sort, keyset pages neither skip nor repeat rows, and a page of a 100,000-row table
comes back in a few milliseconds (bench/usage_log_scale.py does ten million)."""

import random
import time

import pytest

from gateway_core.admin.usage import cursor_of, page_cursor, parse_cursor
from gateway_core.store import CORE_MIGRATIONS, Store, usage

ROWS = 100_000
T0 = 1_767_225_600.0


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    store = Store(str(tmp_path_factory.mktemp("usage") / "gw.db"), CORE_MIGRATIONS)
    store.migrate()
    conn = store.connect()
    rng = random.Random(7)
    rows = []
    for n in range(ROWS):
        key = rng.randrange(200)
        draw = rng.randrange(100)
        status = 200 if draw < 97 else 429 if draw < 99 else 502
        # created_at is the request's start: rows are written when requests end, so
        # it is not monotonic in id (long streams finish after shorter, later ones)
        started = T0 + n * 10 - rng.choice((0, 0, 0, 5, 60, 600))
        rows.append((f"req_{n}", started, 1 + key % 40, 1 + key, f"m{rng.randrange(10)}", status))
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO usage_logs (request_id, created_at, user_id, key_id, model, status, protocol, endpoint) "
        "VALUES (?, ?, ?, ?, ?, ?, 'openai', 'chat')",
        rows,
    )
    conn.execute("COMMIT")
    yield conn
    conn.close()


FILTERS = [
    ({}, "idx_usage_logs_created_at"),
    ({"key_id": 17}, "idx_usage_logs_key_id_created_at"),
    ({"user_id": 5}, "idx_usage_logs_user_id_created_at"),
    ({"model": "m3"}, "idx_usage_logs_model_created_at"),
    ({"status": 502}, "idx_usage_logs_status_created_at"),
    ({"since": T0 + 500_000, "until": T0 + 503_600}, "idx_usage_logs_created_at"),
    ({"key_id": 17, "since": T0 + 100_000}, "idx_usage_logs_key_id_created_at"),
    ({"key_id": 17, "model": "m3", "status": 200}, "idx_usage_logs_key_id_created_at"),
    ({"user_id": 5, "model": "m3"}, "idx_usage_logs_user_id_created_at"),
    ({"model": "m3", "status": 429}, "idx_usage_logs_model_created_at"),
    ({"user_id": 5, "errors": True}, "idx_usage_logs_user_id_created_at"),
    ({"errors": True}, "idx_usage_logs_created_at"),
]


@pytest.mark.parametrize(("filters", "index"), FILTERS)
def test_each_filter_is_one_index_range_scan_without_a_sort(conn, filters, index):
    sql, params = usage.usage_query(before=(T0 + 600_000, 10**9), **filters)
    plan = " ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    assert index in plan and "TEMP B-TREE" not in plan, plan


@pytest.mark.parametrize(("filters", "index"), FILTERS)
def test_a_page_forward_is_one_index_range_scan_too(conn, filters, index):
    sql, params = usage.usage_query(after=(T0 + 600_000, 0), **filters)
    plan = " ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    assert index in plan and "TEMP B-TREE" not in plan, plan


def test_paging_forward_retraces_the_pages_backward(conn):
    pages, before = [], None
    for _ in range(4):
        page = usage.query_usage(conn, user_id=5, errors=True, limit=15, before=before)
        assert len(page) == 15 and all(row["status"] >= 400 and row["user_id"] == 5 for row in page)
        pages.append(page)
        before = cursor_of(page[-1])
    for newer, page in zip(pages, pages[1:]):
        back = usage.query_usage(conn, user_id=5, errors=True, limit=15, after=cursor_of(page[0]))
        assert [row["id"] for row in back] == [row["id"] for row in newer]


def _matches(row, filters):
    for column in ("key_id", "user_id", "model", "status"):
        if column in filters and row[column] != filters[column]:
            return False
    return filters.get("since", 0) <= row["created_at"] < filters.get("until", float("inf"))


@pytest.mark.parametrize(("filters", "index"), FILTERS[:6])
def test_keyset_pages_are_newest_first_and_neither_skip_nor_repeat(conn, filters, index):
    everything = [dict(zip(("id", "created_at", "key_id", "user_id", "model", "status"), row)) for row in conn.execute(
        "SELECT id, created_at, key_id, user_id, model, status FROM usage_logs"
    )]  # fmt: skip
    expected = sorted((r for r in everything if _matches(r, filters)), key=lambda r: (r["created_at"], r["id"]), reverse=True)
    expected = [r["id"] for r in expected][:1000]
    seen, before = [], None
    while len(seen) < len(expected):
        page = usage.query_usage(conn, limit=97, before=before, **filters)
        if not page:
            break
        seen.extend(r["id"] for r in page)
        before = parse_cursor(page_cursor(page[-1]))
    assert seen[: len(expected)] == expected


@pytest.mark.parametrize(("filters", "index"), FILTERS)
def test_a_filtered_page_is_fast(conn, filters, index):
    usage.query_usage(conn, limit=50, **filters)  # warm
    started = time.perf_counter()
    for _ in range(5):
        usage.query_usage(conn, limit=50, before=(T0 + 900_000, 10**9), **filters)
    assert (time.perf_counter() - started) / 5 < 0.05


@pytest.mark.parametrize(
    "filters",
    [{}, {"user_id": 3}, {"key_id": 17, "errors": True}, {"model": "m4", "status": 429}, {"since": T0 + 200_000, "until": T0 + 400_000}],
)
def test_the_totals_of_a_filter_count_every_row_it_matches(conn, filters):
    """What the console's logs page shows above a filtered log: the same rows the pages walk."""
    totals = usage.filter_totals(conn, **filters)
    rows = [dict(zip(("user_id", "key_id", "model", "status", "created_at"), row))
            for row in conn.execute("SELECT user_id, key_id, model, status, created_at FROM usage_logs")]  # fmt: skip

    def matches(row):
        return (
            all(row[name] == filters[name] for name in ("user_id", "key_id", "model", "status") if name in filters)
            and (not filters.get("errors") or row["status"] >= 400)
            and row["created_at"] >= filters.get("since", 0) and row["created_at"] < filters.get("until", 1e12)
        )

    expected = [row for row in rows if matches(row)]
    assert totals.requests == len(expected) > 0
    assert totals.errors == sum(row["status"] >= 400 for row in expected)
    assert (totals.input_tokens, totals.output_tokens, totals.cost_micros) == (0, 0, 0)  # this table logs no tokens
