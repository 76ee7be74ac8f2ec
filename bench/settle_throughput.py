"""Settled requests per second through the store: SQLite's group-commit writer,
or PostgreSQL's pool.

    .venv/bin/python bench/settle_throughput.py [--requests 20000] [--concurrency 256]
    .venv/bin/python bench/settle_throughput.py --postgres postgresql://postgres@127.0.0.1/postgres [--pool 10] [--max-batch N] [--flushers N]

Runs the billing path of the gateway — the quota policy's ``admit`` (the
reservation: one write), the usage row filled and priced from the request's
outcome, then the recorder (release, capture, key usage and the usage-log row:
one write) — for ``--requests`` priced
requests, ``--concurrency`` at a time, on uvloop, against a fresh SQLite store
(WAL, ``synchronous=NORMAL``, as the gateway runs it). No HTTP: this measures
what the store sustains, the ceiling the gateway's billing puts on throughput.
Prints requests/s, the writer's transactions and average batch, the latency of
the two writes, and checks the money invariants at the end.

With ``--postgres URL`` the seeded SQLite store is copied (``copy-store``) into a
fresh database on that server, dropped afterwards, and the store is
:class:`~gateway_core.store.postgres.PostgresStore` with a pool of ``--pool``;
its settlements go several per round trip (at most ``--max-batch``; 1 sends each
alone, as before batching), and the server's CPU per settled request is read
from ``/proc`` (the postmaster's process tree, when the server runs here).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import uvloop  # noqa: E402

from gateway_core.snapshot import TtlSnapshot  # noqa: E402
from gateway_core.client_protocol import Call, capped_output  # noqa: E402
from gateway_core.context import RequestContext, new_request_id  # noqa: E402
from gateway_core.model import Usage  # noqa: E402
from gateway_core.outcome import Outcome  # noqa: E402
from gateway_core.policies.quota import Quota  # noqa: E402
from gateway_core.recorder import Recorder  # noqa: E402
from gateway_core.settlement import usage_row  # noqa: E402
from gateway_core.secrets import hash_key  # noqa: E402
from gateway_core.store import CORE_MIGRATIONS, Store, keys, prices, users, wallet  # noqa: E402
from gateway_core.store.audit import audit  # noqa: E402
from gateway_core.store.copy import copy_store  # noqa: E402
from gateway_core.store.postgres import PostgresStore  # noqa: E402
from gateway_core.store.postgres.audit import audit as pg_audit  # noqa: E402

import asyncpg  # noqa: E402
import attrs  # noqa: E402
import pg_column  # noqa: E402
from cpu import process_tree  # noqa: E402

MODEL = "bench-model"
OPENAI = SimpleNamespace(name="openai")  # the client protocol, as the usage row names it
ANSWERED = Outcome(200, "done", usage=Usage(input_tokens=150, output_tokens=120))


def seed(store: Store, users_count: int) -> list:
    conn = store.connect()
    records = []
    for n in range(users_count):
        user_id = users.add_user(conn, f"user{n}")
        wallet.topup(conn, user_id, 1_000_000_000_000)
        _, secret = keys.create_key(conn, user_id, name="bench", group="default", quota_micros=10**15)
        records.append(keys.find_key(conn, hash_key(secret)))
    prices.set_price(conn, MODEL, 2_500_000, 10_000_000)
    conn.close()
    return records


async def one(services, quota: Quota, recorder: Recorder, key, holds: list, settles: list) -> None:
    ctx = RequestContext(request_id=new_request_id(), protocol=OPENAI, client_ip="127.0.0.1", headers={}, endpoint="chat")
    ctx.key = key
    ctx.body_size = 600
    ctx.call = Call(
        protocol="openai", endpoint="chat", wire="openai.chat", model=MODEL, stream=False, body={"max_tokens": 256},
        billing=capped_output(256),
    )
    started = time.perf_counter()
    await quota.admit(ctx, services)
    held = time.perf_counter()
    await recorder.record(usage_row(ctx, ANSWERED), ctx.charge)
    holds.append(held - started)
    settles.append(time.perf_counter() - held)


async def run(args) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = Store(str(Path(tmp) / "bench.db"), CORE_MIGRATIONS)
        sqlite.migrate()
        key_records = seed(sqlite, args.users)
        store: Store | PostgresStore = sqlite
        postmaster, batches, in_batches, alone = 0, 0, 0, 0
        if args.postgres:
            url = await pg_column.fresh_database(args.postgres)
            await copy_store(sqlite.path, url, CORE_MIGRATIONS)
            store = PostgresStore(url, max_size=args.pool)
            store.batcher.max_batch = args.max_batch
            store.batcher.flushers = args.flushers or store.batcher.flushers
            postmaster = await pg_column.postmaster_pid(url)
        await store.start()
        services = SimpleNamespace(store=store, prices=TtlSnapshot(store.price_snapshot, ttl=3600), router=None)
        quota, recorder = Quota(), Recorder(store)
        import structlog

        structlog.configure(processors=[], logger_factory=structlog.ReturnLoggerFactory())  # no log output
        holds: list[float] = []
        settles: list[float] = []
        semaphore = asyncio.Semaphore(args.concurrency)

        async def bounded(n: int) -> None:
            async with semaphore:
                await one(services, quota, recorder, key_records[n % len(key_records)], holds, settles)

        await asyncio.gather(*(bounded(n) for n in range(min(500, args.requests))))  # warm up
        holds.clear(), settles.clear()
        stats = sqlite.writer_stats if store is sqlite else None
        before = (stats.transactions, stats.writes) if stats else (0, 0)
        batched = attrs.evolve(store.batcher.stats) if isinstance(store, PostgresStore) else None
        server_cpu = tree_cpu_seconds(postmaster) if args.postgres else 0.0
        started = time.perf_counter()
        await asyncio.gather(*(bounded(n) for n in range(args.requests)))
        elapsed = time.perf_counter() - started
        server_cpu = tree_cpu_seconds(postmaster) - server_cpu if args.postgres else 0.0
        if isinstance(store, PostgresStore) and batched is not None:
            now = store.batcher.stats
            batches, in_batches, alone = now.batches - batched.batches, now.settlements - batched.settlements, now.singles - batched.singles
        transactions, writes = (stats.transactions - before[0], stats.writes - before[1]) if stats else (0, 0)
        await store.close()
        if isinstance(store, PostgresStore):
            conn = await asyncpg.connect(store.dsn)
            report = await pg_audit(conn)
            await conn.close()
            await pg_column.drop_database(args.postgres, store.dsn)
        else:
            lite = sqlite.connect()
            report = audit(lite)
            lite.close()

    def ms(values: list[float], q: float) -> float:
        return statistics.quantiles(values, n=100)[int(q) - 1] * 1000 if q < 100 else max(values) * 1000

    print(f"{args.requests:,} priced requests, concurrency {args.concurrency}, {args.users} user(s)/key(s)")
    print(f"settled requests/s : {args.requests / elapsed:,.0f}   ({elapsed:.2f} s)")
    if args.postgres:
        flushers = store.batcher.flushers if isinstance(store, PostgresStore) else 0
        print(f"store              : PostgreSQL, a pool of {args.pool} connections, {flushers} flusher(s), batches of at most {args.max_batch}")
        print(f"settlements        : {in_batches:,} in {batches:,} batches (avg {in_batches / max(1, batches):.1f}), {alone:,} alone")
        print(f"PostgreSQL CPU     : {server_cpu * 1000 / args.requests:.3f} ms per settled request")
    else:
        print(f"writer             : {writes:,} writes in {transactions:,} transactions (avg batch {writes / max(1, transactions):.1f})")
    print(f"hold write   ms    : p50 {ms(holds, 50):.2f}  p99 {ms(holds, 99):.2f}")
    print(f"settle+log   ms    : p50 {ms(settles, 50):.2f}  p99 {ms(settles, 99):.2f}")
    print(f"invariants         : {'OK' if report.ok else report.problems}  ({report.ledger_rows:,} ledger rows)")
    return 0 if report.ok else 1


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU of ``pid`` and its descendants (the server's backends)."""
    total = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--users", type=int, default=50, help="distinct users (one key each)")
    parser.add_argument("--postgres", metavar="URL", help="measure PostgreSQL: a fresh database on this server")
    parser.add_argument("--pool", type=int, default=10, help="PostgreSQL pool size (default 10, [gateway] db_pool_size)")
    parser.add_argument("--max-batch", type=int, default=256, help="PostgreSQL: settlements per round trip at most (1: each alone)")
    parser.add_argument("--flushers", type=int, default=0, help="PostgreSQL: batches in flight at once (default: half the pool)")
    args = parser.parse_args()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
