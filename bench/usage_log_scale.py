"""The usage log at ten million rows: how long a filtered, newest-first page takes.

    .venv/bin/python bench/usage_log_scale.py [--rows 10000000] [--db /tmp/relaygate-usage-scale.db] [--reuse]

Creates a store with the gateway's own migrations, fills ``usage_logs`` with
``--rows`` synthetic requests spread over 30 days (1,000 keys, 200 users, 20
models, statuses 200 / 429 / 502 at 97 / 2 / 1 %) — ``INSERT … SELECT`` from a
recursive CTE in transactions of a million rows, the table's indexes dropped
during the load and then rebuilt from their own DDL, so they are exactly the
migrations' — and then times :func:`gateway_core.store.usage.query_usage`, the
function ``relaygate logs`` and the console call, for pages of 50 rows: the
first page and the next (keyset) page of each filter, by key, user, model,
status, a one-hour time range, key + time range, and none. Each query runs
``--runs`` times on a warm cache; the script prints the median and the worst
time, and each query plan. ``--reuse`` keeps an existing file of the right size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway_core.store import CORE_MIGRATIONS, Store  # noqa: E402
from gateway_core.store.usage import query_usage, usage_query  # noqa: E402

DAYS = 30
CHUNK = 1_000_000
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z

_FILL = """
WITH RECURSIVE seq(x) AS (SELECT ?1 UNION ALL SELECT x + 1 FROM seq WHERE x < ?2),
-- materialized: each row draws its key, model and status once
drawn AS MATERIALIZED (SELECT x, abs(random()) % 1000 AS k, abs(random()) % 20 AS m, abs(random()) % 100 AS s FROM seq)
INSERT INTO usage_logs (
    request_id, created_at, user_id, key_id, key_name, protocol, endpoint, model, upstream_model,
    channel_id, channel_name, stream, input_tokens, output_tokens, cached_tokens, cache_write_tokens,
    cost_micros, held_micros, overrun_micros, estimated, duration_ms, first_token_ms, status, end_reason,
    error_type, client_ip, attempts)
SELECT
    'req_' || printf('%024x', x),
    ?3 + x * ?4,
    1 + k % 200,
    1 + k,
    'key-' || (1 + k),
    'openai', 'chat',
    'model-' || m,
    'upstream-model-' || m,
    1 + x % 8, 'channel-' || (1 + x % 8),
    x % 3 = 0,
    200 + (x * 13) % 1800, 50 + (x * 17) % 900, (x * 5) % 200, 0,
    (x * 97) % 20000, 30000, 0, x % 50 = 0,
    200.0 + (x % 5000), 80.0 + (x % 700),
    CASE WHEN s < 97 THEN 200 WHEN s < 99 THEN 429 ELSE 502 END,
    CASE WHEN s < 97 THEN 'done' ELSE NULL END,
    CASE WHEN s < 97 THEN NULL WHEN s < 99 THEN 'insufficient_quota' ELSE 'upstream' END,
    '10.0.' || (x % 250) || '.' || (x % 200),
    '[]'
FROM drawn
"""


def generate(store: Store, rows: int) -> float:
    started = time.perf_counter()
    conn = store.connect()
    conn.execute("PRAGMA cache_size = -1000000")  # 1 GB of page cache for the index builds
    conn.execute("PRAGMA temp_store = MEMORY")
    indexes = [sql for (sql,) in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage_logs' AND sql IS NOT NULL"
    )]  # fmt: skip
    names = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage_logs' AND sql IS NOT NULL"
    )]  # fmt: skip
    for name in names:
        conn.execute(f"DROP INDEX {name}")
    spacing = DAYS * 86400 / rows
    for first in range(1, rows + 1, CHUNK):
        last = min(rows, first + CHUNK - 1)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(_FILL, (first, last, T0, spacing))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        print(f"  {last:>11,} rows  {time.perf_counter() - started:6.1f} s", flush=True)
    for sql in indexes:
        step = time.perf_counter()
        conn.execute(sql)
        print(f"  {sql.split(' ON ')[0].split()[-1]:<42} {time.perf_counter() - step:6.1f} s", flush=True)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - started


def count(store: Store) -> int:
    conn = store.connect()
    try:
        return conn.execute("SELECT coalesce(max(id), 0) FROM usage_logs").fetchone()[0]
    finally:
        conn.close()


def cases(rows: int) -> list[tuple[str, dict]]:
    middle = T0 + DAYS * 86400 / 2
    return [
        ("no filter", {}),
        ("key", {"key_id": 417}),
        ("user", {"user_id": 17}),
        ("model", {"model": "model-7"}),
        ("status 502 (1 %)", {"status": 502}),
        ("status 429 (2 %)", {"status": 429}),
        ("time range (1 h)", {"since": middle, "until": middle + 3600}),
        ("key + time range (1 day)", {"key_id": 417, "since": middle, "until": middle + 86400}),
        ("key + model", {"key_id": 417, "model": "model-7"}),
        ("key, 15 days back (cursor)", {"key_id": 417, "before": (middle, 2**62)}),
        ("model + status 502", {"model": "model-7", "status": 502}),
    ]


def timed(conn, filters: dict, runs: int) -> tuple[list[float], list[float], int]:
    """Milliseconds of each run's first page and of the page after it (keyset)."""
    firsts, seconds, found = [], [], 0
    for _ in range(runs):
        started = time.perf_counter()
        page = query_usage(conn, limit=50, **filters)
        firsts.append((time.perf_counter() - started) * 1000)
        found = len(page)
        if page:
            cursor = (page[-1]["created_at"], page[-1]["id"])
            started = time.perf_counter()
            query_usage(conn, limit=50, **{**filters, "before": cursor})
            seconds.append((time.perf_counter() - started) * 1000)
    return firsts, seconds, found


def plan(conn, filters: dict) -> str:
    sql, params = usage_query(limit=50, **filters)
    return "; ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--db", default="/tmp/relaygate-usage-scale.db")
    parser.add_argument("--reuse", action="store_true", help="keep an existing database of --rows rows")
    parser.add_argument("--runs", type=int, default=20, help="runs per query (at least 2)")
    args = parser.parse_args()
    path = Path(args.db)
    store = Store(str(path), CORE_MIGRATIONS)
    if not (args.reuse and path.exists() and count(store) == args.rows):
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        store.migrate()
        print(f"generating {args.rows:,} usage rows in {path} ...", flush=True)
        took = generate(store, args.rows)
        print(f"generated in {took:.1f} s; file {path.stat().st_size / 1e9:.2f} GB")
    conn = store.connect(query_only=True)
    print(f"\n{count(store):,} rows; pages of 50, newest first; {args.runs} runs each")
    print("first run: the pages the query touches may not be in memory yet; then the median and worst of the rest\n")
    print(f"{'filter':<28} {'rows':>4}  {'first page ms':>28}  {'next page ms':>28}")
    print(f"{'':<28} {'':>4}  {'first run':>9} {'median':>8} {'worst':>9}  {'first run':>9} {'median':>8} {'worst':>9}")
    plans = []
    worst = cold = 0.0
    for name, filters in cases(args.rows):
        firsts, seconds, found = timed(conn, filters, args.runs)
        worst = max([worst, *firsts[1:], *seconds[1:]])
        cold = max([cold, firsts[0], *seconds[:1]])
        columns = [f"{firsts[0]:9.3f} {statistics.median(firsts[1:]):8.3f} {max(firsts[1:]):9.3f}"]
        if len(seconds) > 1:
            columns.append(f"{seconds[0]:9.3f} {statistics.median(seconds[1:]):8.3f} {max(seconds[1:]):9.3f}")
        else:
            columns.append(f"{'-':>9} {'-':>8} {'-':>9}")
        print(f"{name:<28} {found:>4}  {columns[0]}  {columns[1]}")
        plans.append((name, plan(conn, filters)))
    print(f"\nworst page: {worst:.2f} ms warm, {cold:.2f} ms on a first run")
    print("\nquery plans:")
    for name, text in plans:
        print(f"  {name:<28} {text}")
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
