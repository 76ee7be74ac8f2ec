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
:class:`~relaygate_postgres.store.PostgresStore` with a pool of ``--pool``;
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

from gateway_core.routing.snapshot import TtlSnapshot  # noqa: E402
from gateway_core.client_protocol import Call, capped_output  # noqa: E402
from gateway_core.request.context import RequestContext, new_request_id  # noqa: E402
from gateway_core.model import Usage  # noqa: E402
from gateway_core.request.outcome import Outcome  # noqa: E402
from gateway_core.policies.quota import Quota  # noqa: E402
from gateway_core.request.recorder import Recorder  # noqa: E402
from gateway_core.request.settlement import usage_row  # noqa: E402
from gateway_core.secrets import hash_key  # noqa: E402
from gateway_core.store import CORE_MIGRATIONS, Store, keys, prices, users, wallet  # noqa: E402
from gateway_core.store.audit import audit  # noqa: E402
from gateway_core.store.copy import copy_store  # noqa: E402
from gateway_core.runtime.registry import Registry  # noqa: E402
from gateway_core.store.kinds import BUILT_IN  # noqa: E402
from relaygate_postgres.store import PostgresStore  # noqa: E402
from relaygate_postgres.audit import audit as pg_audit  # noqa: E402

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
    ctx = _context(key)
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
            await copy_store(Registry(stores=list(BUILT_IN), migrations=list(CORE_MIGRATIONS)), sqlite.path, url)
            store = PostgresStore(url, max_size=args.pool)
            store.batcher.max_batch = args.max_batch
            store.batcher.flushers = args.flushers or store.batcher.flushers
            postmaster = await pg_column.postmaster_pid(url)
        statements = [0]
        if args.count_statements and store is sqlite:
            opened = sqlite.connect

            def traced(*, query_only: bool = False):
                conn = opened(query_only=query_only)
                if not query_only:  # the writer's connection: count each statement it starts (not a trigger's)
                    conn.set_trace_callback(_statement_counter(statements))
                return conn

            sqlite.connect = traced  # type: ignore[method-assign]
        await store.start()
        writer_clock = writer_cpu_clock(sqlite) if store is sqlite else None
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
        statements_before = statements[0]
        writer_cpu = time.clock_gettime(writer_clock) if writer_clock is not None else 0.0
        process_cpu = time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(bounded(n) for n in range(args.requests)))
        elapsed = time.perf_counter() - started
        process_cpu = time.process_time() - process_cpu
        writer_cpu = time.clock_gettime(writer_clock) - writer_cpu if writer_clock is not None else 0.0
        statements_run = statements[0] - statements_before
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
        print(f"writer thread CPU  : {writer_cpu * 1000 / args.requests:.4f} ms per priced request (hold + settle + usage row)")
        if args.count_statements:
            print(f"statements         : {statements_run / args.requests:.2f} per priced request (the writer's; a trigger's work not counted)")
    print(f"process CPU        : {process_cpu * 1000 / args.requests:.4f} ms per priced request (every thread)")
    print(f"hold write   ms    : p50 {ms(holds, 50):.2f}  p99 {ms(holds, 99):.2f}")
    print(f"settle+log   ms    : p50 {ms(settles, 50):.2f}  p99 {ms(settles, 99):.2f}")
    print(f"invariants         : {'OK' if report.ok else report.problems}  ({report.ledger_rows:,} ledger rows)")
    return 0 if report.ok else 1


class QueuedJobs:
    """Stands in for the store's writer thread: keeps what the store queues, so that
    :func:`writer_only` runs it as one batch of the real writer, on this thread."""

    def __init__(self) -> None:
        self.jobs: list = []

    def submit(self, job) -> None:
        self.jobs.append(job)

    def backlog(self) -> int:
        return len(self.jobs)


async def writer_only(args) -> int:
    """The writer's own CPU per priced request, isolated from the event loop: the
    store's reservations and settlements are queued as the gateway queues them, then
    run by the real group-commit writer (``GroupCommitWriter._run_batch``) on this
    thread in batches of ``--batch`` holds plus ``--batch`` settlements, and only that
    call is timed (``time.thread_time``); best of ``--repeat`` rounds."""
    from gateway_core.store.writer import GroupCommitWriter

    with tempfile.TemporaryDirectory() as tmp:
        sqlite = Store(str(Path(tmp) / "bench.db"), CORE_MIGRATIONS)
        sqlite.migrate()
        key_records = seed(sqlite, args.users)
        conn = sqlite.connect()
        statements = [0]
        if args.count_statements:
            conn.set_trace_callback(_statement_counter(statements))
        writer = GroupCommitWriter(lambda: conn)
        queued = QueuedJobs()
        sqlite._writer = queued  # type: ignore[assignment]
        sqlite.own_holds("bench-owner")
        async def price_snapshot():
            return _price_snapshot(conn)

        services = SimpleNamespace(store=sqlite, prices=TtlSnapshot(price_snapshot, ttl=3600), router=None)
        await services.prices.load()
        quota, recorder = Quota(), Recorder(sqlite)
        import structlog

        structlog.configure(processors=[], logger_factory=structlog.ReturnLoggerFactory())

        async def admitted(ctx):
            await quota.admit(ctx, services)
            return ctx

        async def run_queued(expected: int) -> float:
            while len(queued.jobs) < expected:
                await asyncio.sleep(0)
            jobs, queued.jobs = queued.jobs, []
            started = time.thread_time()
            writer._run_batch(conn, jobs)
            spent = time.thread_time() - started
            await asyncio.sleep(0)  # the waiters' results
            return spent

        best, per_round_statements = float("inf"), 0.0
        for _ in range(args.repeat):
            cpu, counted, n = 0.0, statements[0], 0
            waiting: list = []
            while args.batch == 1 and n < args.requests:  # one request at a time: each write alone in its batch
                hold = asyncio.ensure_future(admitted(_context(key_records[n % len(key_records)])))
                n += 1
                cpu += await run_queued(1)
                ctx = await hold
                settle = asyncio.ensure_future(recorder.record(usage_row(ctx, ANSWERED), ctx.charge))
                cpu += await run_queued(1)
                await settle
            while n < args.requests or waiting:
                holds = [asyncio.ensure_future(admitted(_context(key_records[(n + i) % len(key_records)]))) for i in range(min(args.batch, args.requests - n))]
                n += len(holds)
                settles = [asyncio.ensure_future(recorder.record(usage_row(ctx, ANSWERED), ctx.charge)) for ctx in waiting]
                cpu += await run_queued(len(holds) + len(settles))
                await asyncio.gather(*settles)
                waiting = list(await asyncio.gather(*holds))
            best = min(best, cpu / args.requests)
            per_round_statements = (statements[0] - counted) / args.requests
        conn.close()
        lite = sqlite.connect()
        report = audit(lite)
        lite.close()
    shape = "each write alone (concurrency 1)" if args.batch == 1 else f"batches of {args.batch} holds + {args.batch} settlements"
    print(f"writer alone, {shape}, {args.requests:,} priced requests x {args.repeat}")
    print(f"writer CPU         : {best * 1000:.4f} ms per priced request (best round; hold + settle + usage row)")
    if args.count_statements:
        print(f"statements         : {per_round_statements:.2f} per priced request (a trigger's work not counted)")
    print(f"invariants         : {'OK' if report.ok else report.problems}  ({report.ledger_rows:,} ledger rows)")
    return 0 if report.ok else 1


def _statement_counter(count: list[int]):
    """A trace callback counting the statements a connection starts. SQLite traces a
    statement again for each trigger it fires (same text): those repeats are not counted."""
    last = [""]

    def trace(sql: str) -> None:
        if sql != last[0] and not sql.startswith("--"):
            count[0] += 1
        last[0] = sql

    return trace


def _context(key) -> RequestContext:
    ctx = RequestContext(request_id=new_request_id(), protocol=OPENAI, client_ip="127.0.0.1", headers={}, endpoint="chat")
    ctx.key = key
    ctx.body_size = 600
    ctx.call = Call(
        protocol="openai", endpoint="chat", wire="openai.chat", model=MODEL, stream=False, body={"max_tokens": 256},
        billing=capped_output(256),
    )
    return ctx


def _price_snapshot(conn):
    from gateway_core.store.requests import read_price_snapshot

    return read_price_snapshot(conn)


def writer_cpu_clock(store: Store) -> int:
    """The CPU-time clock of the store's writer thread."""
    thread = store._writer._thread if store._writer is not None else None
    if thread is None or thread.ident is None:
        raise RuntimeError("the writer thread is not running")
    return time.pthread_getcpuclockid(thread.ident)


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
    parser.add_argument("--count-statements", action="store_true", help="SQLite: count the writer's statements (slows it)")
    parser.add_argument("--writer-only", action="store_true", help="SQLite: time the writer's batches alone, on this thread")
    parser.add_argument("--batch", type=int, default=25, help="--writer-only: holds (and settlements) per batch; 1: each write alone")
    parser.add_argument("--repeat", type=int, default=5, help="--writer-only: rounds, the best one reported")
    args = parser.parse_args()
    return uvloop.run(writer_only(args) if args.writer_only else run(args))


if __name__ == "__main__":
    sys.exit(main())
