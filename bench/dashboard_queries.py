"""The console dashboard's figures on a large usage log: how long each range takes.

    .venv/bin/python bench/dashboard_queries.py [--rows 100000] [--db /tmp/relaygate-dashboard.db] [--runs 10]

Fills a store like ``usage_log_scale.py`` (``--rows`` synthetic requests over 30
days: 1,000 keys, 200 users, 20 models, 8 channels), then runs what the dashboard
page runs for each range (last 24 hours by hour, last 7 and 30 days by day):
:func:`gateway_core.store.usage.usage_totals` over time and by model and key for
one user, and over time and by model, user and channel for the whole site.
Prints the median and worst time of the page's queries together, the rows each
range covers, and the query plans, twice: reading every row of the log (as
before ``usage_hourly``) and reading whole hours from the hourly totals (the log
rolled up first, as ``serve``'s retention job keeps it). With ``--console`` it then serves the store
with a gateway on loopback and times the page itself over HTTP, signed in as an
admin (``/console/dashboard`` for each range, the site's and the admin's own).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway_core.store import CORE_MIGRATIONS, Store  # noqa: E402
from gateway_core.store.usage import totals_query, usage_totals  # noqa: E402
from gateway_core.store.usage_hourly import roll_up  # noqa: E402
from usage_log_scale import DAYS, count, generate  # noqa: E402

HOUR, DAY = 3600, 86_400
USER = 17


def ranges(now: float) -> dict[str, tuple[float, float, float]]:
    """``(since, until, step)`` of each range, as the console chooses them (a UTC browser):
    whole hours or days ending with the current one."""
    spans = {"24 h by hour": (HOUR, 24), "7 d by day": (DAY, 7), "30 d by day": (DAY, 30)}
    found = {}
    for name, (step, count) in spans.items():
        until = (now // step) * step + step
        found[name] = (until - count * step, until, step)
    return found


def end_now(store: Store) -> float:
    """Shift the log's times so that it ends now (the console's ranges end now); return now."""
    now = time.time()
    conn = store.connect()
    with conn:
        last = conn.execute("SELECT max(created_at) FROM usage_logs").fetchone()[0] or now
        conn.execute("UPDATE usage_logs SET created_at = created_at + ?", (now - 60 - last,))
        # the hours moved: count them again
        conn.execute("DELETE FROM usage_hourly")
        conn.execute("DELETE FROM usage_site")
        conn.execute("UPDATE usage_rollup SET rolled_id = 0, seen_id = 0, seen_at = 0")
    started = time.perf_counter()
    with conn:
        while roll_up(conn, 10_000, 0.0, now).folded or conn.execute("SELECT rolled_id < seen_id FROM usage_rollup").fetchone()[0]:
            pass
    hours = conn.execute("SELECT count(*) FROM usage_hourly").fetchone()[0]
    print(f"rolled up into {hours:,} hourly rows (and the site's totals) in {time.perf_counter() - started:.2f} s")
    conn.close()
    return now


def concentrate(store: Store, keys: int) -> None:
    """A site's traffic as it usually is: ``keys`` keys (one user each), 5 models, 3 channels."""
    conn = store.connect()
    with conn:
        conn.execute(
            "UPDATE usage_logs SET key_id = 1 + (key_id - 1) % ?1, user_id = 1 + (key_id - 1) % ?1, "
            "model = 'model-' || (id % 5), channel_id = 1 + id % 3, channel_name = 'channel-' || (1 + id % 3)",
            (keys,),
        )
    conn.close()


def page_queries(user_id: int | None) -> list[tuple[str, dict]]:
    groupings = ("model", "key") if user_id is not None else ("model", "user", "channel")
    return [("time", {}), *((by, {}) for by in groupings)]


def run_page(conn, since: float, until: float, step: float, user_id: int | None, hourly: bool) -> tuple[float, int]:
    started = time.perf_counter()
    requests = 0
    for by, _ in page_queries(user_id):
        if by == "time":
            buckets = int((until - since) // step)
            found = usage_totals(conn, "time", since, buckets, until=until, user_id=user_id, bucket=step, hourly=hourly)
            requests = sum(t.requests for t in found)
        else:
            usage_totals(conn, by, since, until=until, user_id=user_id, hourly=hourly)
    return (time.perf_counter() - started) * 1000, requests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--db", default="/tmp/relaygate-dashboard.db")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--console", action="store_true", help="also time the page through a running gateway")
    parser.add_argument(
        "--active-keys", type=int, metavar="K",
        help="the traffic of K keys (of K users, 5 models, 3 channels) instead of 1,000 keys drawn evenly; another --db",
    )  # fmt: skip
    args = parser.parse_args()
    if args.active_keys and args.db == parser.get_default("db"):
        args.db = f"/tmp/relaygate-dashboard-{args.active_keys}-keys.db"
    path = Path(args.db)
    store = Store(str(path), CORE_MIGRATIONS)
    if not (path.exists() and count(store) == args.rows):
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        store.migrate()
        conn = store.connect()
        conn.executemany("INSERT INTO users (id, name, created_at) VALUES (?, ?, 0)", [(i, f"user-{i}") for i in range(1, 201)])
        conn.executemany(
            "INSERT INTO api_keys (id, user_id, name, key_hash, prefix, created_at) VALUES (?, ?, ?, ?, 'sk-x', 0)",
            [(k, 1 + (k - 1) % 200, f"key-{k}", f"hash-{k}") for k in range(1, 1001)],
        )  # fmt: skip
        conn.commit()
        conn.close()
        print(f"generating {args.rows:,} usage rows in {path} ...", flush=True)
        generate(store, args.rows)
        if args.active_keys:
            concentrate(store, args.active_keys)
    now = end_now(store)
    conn = store.connect(query_only=True)
    print(f"\n{count(store):,} rows over {DAYS} days; each figure: the page's queries together, {args.runs} runs\n")
    print(f"{'read':<7} {'page':<6} {'range':<14} {'requests':>9} {'first ms':>9} {'median ms':>10} {'worst ms':>9}")
    for hourly in (False, True):
        for who, user_id in (("user", USER), ("site", None)):
            for name, (since, until, step) in ranges(now).items():
                times = []
                for _ in range(args.runs):
                    took, requests = run_page(conn, since, until, step, user_id, hourly)
                    times.append(took)
                read = "hourly" if hourly else "rows"
                print(f"{read:<7} {who:<6} {name:<14} {requests:>9,} {times[0]:9.1f} {statistics.median(times[1:]):10.1f} {max(times[1:]):9.1f}")
    print("\nquery plans (30 days, from the hourly totals):")
    for who, user_id in (("user", USER), ("site", None)):
        for by, _ in page_queries(user_id):
            since, until, step = ranges(now)["30 d by day"]
            sql, params = totals_query(by, since, 50, until=until, user_id=user_id, bucket=step)
            text = "; ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
            print(f"  {who} by {by:<8} {text}")
    conn.close()
    if args.console:
        asyncio.run(time_pages(str(path), args.runs))
    return 0


async def time_pages(db: str, runs: int) -> None:
    """The dashboard page over HTTP, as a browser asks for it (the figures' queries run on
    the gateway's SQLite readers, two at a time)."""
    import re

    import aiohttp

    from gateway_core.config import Config
    from gateway_core.secrets import hash_password
    from gateway_core.store.users import set_password_hash
    from gateway_core.testing import GatewayThread, Seed

    config = Config(db_path=db)
    with Seed(config) as seed:
        found = seed.rows("SELECT id FROM users WHERE name = 'bench-admin'")
        admin = found[0]["id"] if found else seed.user("bench-admin", admin=True)
        conn = seed.store.connect()
        with conn:
            for user_id in (admin, USER):
                set_password_hash(conn, user_id, hash_password("bench-password"))
        conn.close()
    gateway = GatewayThread(config).start()
    try:
        print(f"\nthe page over HTTP (a gateway on this store), {runs} runs; 'figures' is the page's own measure")
        print(f"{'page':<10} {'range':<8} {'median ms':>10} {'worst ms':>9} {'figures ms':>11}")
        for who, name in (("user", f"user-{USER}"), ("site", "bench-admin")):
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
                async with http.get(gateway.url + "/console/login") as response:
                    csrf = re.search(r'name="csrf" value="([^"]+)"', await response.text()).group(1)  # type: ignore[union-attr]
                form = {"csrf": csrf, "name": name, "password": "bench-password"}
                async with http.post(gateway.url + "/console/login", data=form) as response:
                    assert response.status == 200, response.status
                for choice in ("24h", "7d", "30d"):
                    times, figures = [], []
                    for _ in range(runs):
                        started = time.perf_counter()
                        async with http.get(f"{gateway.url}/console/dashboard?range={choice}") as response:
                            page = await response.text()
                            assert response.status == 200, response.status
                        times.append((time.perf_counter() - started) * 1000)
                        figures.append(float(re.search(r"usage log \((\d+) ms\)", page).group(1)))  # type: ignore[union-attr]
                    print(f"{who:<10} {choice:<8} {statistics.median(times):10.1f} {max(times):9.1f} {statistics.median(figures):11.0f}")
    finally:
        gateway.stop()


if __name__ == "__main__":
    sys.exit(main())
