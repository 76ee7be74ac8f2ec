"""Replicas: requests per second and CPU per request with 1, 2 and 3 gateway
replicas on PostgreSQL + Redis, beside one process on SQLite.

``.venv/bin/python bench/replicas.py`` (about 90 s) starts

- ``bench/fast_upstream.py``, the minimal fake OpenAI upstream,
- a Redis server of its own (``redis-server`` on a free loopback port, nothing
  kept on disk), so that its CPU is the gateway's alone (``--redis URL`` to use
  another),
- a fresh database on the PostgreSQL server ``--postgres`` (default: the
  machine's), filled by ``relaygate copy-store`` from a SQLite store seeded
  through the CLI: a user with money, a priced model, a channel to the upstream
  and an API key **with limits** (``--rpm``/``--concurrency`` far above the load,
  so that every request takes and gives back its slots in Redis, none refused),
  and ``--users`` − 1 more users alike (through the admin layer, faster), so that
  the load comes from several clients as in production rather than hammering one
  balance row (every request of one user locks that row for its two commits),

then, one configuration after the other, starts ``relaygate serve`` processes
and runs a closed loop of non-streaming chat requests (``--concurrency`` in
all, spread evenly over the replicas, each on its own port, as a load balancer
would, and over the users' keys) for ``--duration`` seconds after a warm-up:

- ``sqlite``: one process on the SQLite file (limits in its memory);
- ``pg``: one replica on PostgreSQL without Redis (limits in its memory): beside
  ``pg+redis x1`` it shows what the Redis round trips cost the gateway;
- ``pg+redis x1``, ``x2``, ``x3``: 1, 2 and 3 replicas on PostgreSQL + Redis;
- ``pg+redis w2``: one ``serve --workers 2`` (the supervisor, two workers on
  one socket).

Reported per configuration: requests per second, latency percentiles, the
gateway's CPU per request (every replica's process tree, workers included),
Redis's and PostgreSQL's (the backends serving this database) per request, the
upstream's and the load generator's, and the CPU other processes of the machine
used meanwhile (a shared machine says so). ``--pin`` puts replica *i* on CPU
*i* mod the CPUs available (default: the scheduler places everything). Every
answer is checked and every request must leave one usage-log row; errors make
the exit status 1. ``--json`` prints the results for machines. See
``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import pg_column
from cpu import Meter
from loadgen import Budget, Recorder, Target, closed_loop, new_session, request_body, stats
from overhead import smoke
from overhead_report import machine
from processes import Child, free_port, wait_http
from seeding import BENCH_PLUGINS, relaygate_command, seed

HERE = Path(__file__).resolve().parent
CONFIGS = {  # name: (store, replicas, workers per replica, Redis)
    "sqlite": ("sqlite", 1, 1, False),
    "pg": ("pg", 1, 1, False),
    "pg+redis x1": ("pg", 1, 1, True),
    "pg+redis x2": ("pg", 2, 1, True),
    "pg+redis x3": ("pg", 3, 1, True),
    "pg+redis w2": ("pg", 1, 2, True),
}
KEY_LIMITS = ("--rpm", "100000000", "--concurrency", "100000")  # counted, never reached


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Relaygate replicas benchmark (see the module docstring).")
    p.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres", help="the PostgreSQL server (a fresh database is made there)")
    p.add_argument("--redis", metavar="URL", help="use this Redis instead of starting one (its CPU is then not measured)")
    p.add_argument("--duration", type=float, default=8.0, help="measured seconds per configuration (default 8)")
    p.add_argument("--warmup", type=float, default=1.5, help="unmeasured seconds of load first (default 1.5)")
    p.add_argument("--concurrency", type=int, default=48, help="requests in flight in all, spread over the replicas (default 48)")
    p.add_argument("--users", type=int, default=16, help="users (each with a key and a balance) the load comes from (default 16)")
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated subset of: {', '.join(CONFIGS)}")
    p.add_argument("--pin", action="store_true", help="pin replica i to CPU i mod the CPUs available")
    p.add_argument("--json", action="store_true", help="print the results as JSON (and nothing else on stdout)")
    args = p.parse_args(argv)
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = set(args.configs) - set(CONFIGS)
    if unknown:
        p.error(f"unknown configuration(s): {', '.join(sorted(unknown))}")
    return args


def say(args: argparse.Namespace, text: str) -> None:
    print(text, file=sys.stderr if args.json else sys.stdout, flush=True)


async def redis_pid(url: str) -> int | None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        return int((await client.info("server"))["process_id"])
    finally:
        await client.aclose()


async def backends(url: str) -> dict[str, int]:
    """The PostgreSQL backends connected to ``url``'s database, by name for :class:`Meter`."""
    conn = await asyncpg.connect(url)
    try:
        database = url.rsplit("/", 1)[1]
        rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", database)
    finally:
        await conn.close()
    return {f"pg{row['pid']}": row["pid"] for row in rows}


async def more_users(db: Path, plugins: Path, count: int) -> list[str]:
    """``count`` more users, each with money and a key with :data:`KEY_LIMITS`: their keys."""
    from gateway_core.admin import Admin, keys, users, wallet
    from gateway_core.config import load_config
    from gateway_core.runtime.plugins import collect
    from gateway_core.testing.stores import open_admin

    registry = collect(load_config(str(db), plugins))
    limits = {"rpm": int(KEY_LIMITS[1]), "concurrency": int(KEY_LIMITS[3])}

    secrets = []
    async with open_admin(str(db), registry.migrations) as port:
        admin = Admin(port, registry.channel_types)
        for n in range(count):
            user = await users.create_user(admin, f"bench{n + 2}")
            await wallet.topup(admin, user.id, 1_000_000 * 1_000_000, "bench")
            secrets.append((await keys.create_key(admin, user.id, name="bench", limits=limits))[1])
    return secrets


def spread(urls: list[str], secrets: list[str], concurrency: int) -> dict[tuple[int, int], int]:
    """Connection ``j`` goes to replica ``j mod len(urls)`` with key ``j mod len(secrets)``:
    how many connections each (replica, key) pair gets."""
    pairs: dict[tuple[int, int], int] = {}
    for j in range(concurrency):
        pair = (j % len(urls), j % len(secrets))
        pairs[pair] = pairs.get(pair, 0) + 1
    return pairs


async def run_config(name: str, args, tmp: Path, dbs: dict[str, str], plugins: Path, secrets: list[str], pids: dict[str, int], redis: str) -> dict[str, Any]:
    store, replicas, workers, with_redis = CONFIGS[name]
    cores = sorted(os.sched_getaffinity(0))
    children: list[Child] = []
    ports: list[int] = []
    try:
        for n in range(replicas):
            port = free_port()
            ports.append(port)
            argv = [*relaygate_command(), "serve", "--db", dbs[store], "--plugins", str(plugins), "--port", str(port)]
            argv += ["--redis", redis] if with_redis else []
            argv += ["--workers", str(workers)] if workers > 1 else []
            if args.pin:
                argv = ["taskset", "-c", str(cores[n % len(cores)]), *argv]
            children.append(Child(f"replica {n + 1}", argv, tmp / f"{name.replace(' ', '_')}-{n + 1}.log", tmp))
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        for n, (child, url) in enumerate(zip(children, urls)):
            wait_http(url + "/healthz", child, timeout=60)
            await smoke(Target(f"replica {n + 1}", url, secrets[0]), child)
        if workers > 1:
            await asyncio.sleep(3)  # every worker up, not only the first
        share = max(1, args.concurrency // replicas)
        pairs = spread(urls, secrets, share * replicas)
        targets = {pair: Target(f"replica {pair[0] + 1}", urls[pair[0]], secrets[pair[1]]) for pair in pairs}
        rows_before = await usage_rows(dbs[store])
        body = request_body(False)
        sessions = [new_session(share) for _ in urls]

        def load(budget: Budget, recorders: dict[tuple[int, int], Recorder] | None) -> Any:
            return asyncio.gather(*(
                closed_loop(sessions[pair[0]], targets[pair], body, False, count, budget, recorders and recorders[pair])
                for pair, count in pairs.items()
            ))  # fmt: skip

        try:
            await load(Budget(args.warmup, None), None)
            watched = {**pids, **{f"replica{n}": c.pid for n, c in enumerate(children)}}
            if store == "pg":
                watched |= await backends(dbs[store])
            recorders = {pair: Recorder() for pair in pairs}
            with Meter(watched) as meter:
                await load(Budget(args.duration, None), recorders)
        finally:
            for session in sessions:
                await session.close()
        statuses = [child.stop() for child in children]
        sent = sum(t.sent for t in targets.values())
        rows = await usage_rows(dbs[store]) - rows_before
    finally:
        for child in children:
            child.stop()
    merged = Recorder()
    for rec in recorders.values():
        merged.latencies += rec.latencies
        merged.errors.update(rec.errors)
    result = stats(merged, meter.elapsed)
    done = max(1, result["ok"])

    def per_request(names: list[str]) -> float:
        return round(sum(meter.cpu.get(n, 0.0) for n in names) * 1000 / done, 3)

    gateway = [n for n in meter.cpu if n.startswith("replica")]
    result.update({
        "config": name, "replicas": replicas, "workers": workers, "store": store, "redis": with_redis,
        "concurrency": share * replicas, "users": len(secrets),
        "gateway_cpu_ms_per_req": per_request(gateway),
        "gateway_busy_pct_each": [round(100 * meter.cpu[n] / meter.elapsed, 1) for n in gateway],
        "redis_cpu_ms_per_req": per_request(["redis"]) if with_redis and "redis" in meter.cpu else None,
        "postgres_cpu_ms_per_req": per_request([n for n in meter.cpu if n.startswith("pg")]) if store == "pg" else None,
        "upstream_cpu_ms_per_req": per_request(["upstream"]),
        "loadgen_cpu_ms_per_req": per_request(["loadgen"]),
        "foreign_cpu_pct": meter.foreign_pct, "foreign_cpu_top_pct": meter.foreign_top, "steal_pct_by_cpu": meter.steal_pct,
        "exit_statuses": statuses, "usage_rows": rows, "requests_sent": sent, "usage_log_complete": rows == sent,
    })  # fmt: skip
    return result


async def usage_rows(db: str) -> int:
    if db.startswith("postgresql://"):
        conn = await asyncpg.connect(db)
        try:
            return int(await conn.fetchval("SELECT count(*) FROM usage_logs"))
        finally:
            await conn.close()
    import sqlite3

    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM usage_logs").fetchone()[0])


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="relaygate-replicas-"))
    result: dict[str, Any] = {"machine": machine(), "config": {k: v for k, v in vars(args).items() if k != "json"}, "runs": []}
    result["machine"]["cpus_available"] = len(os.sched_getaffinity(0))
    children: list[Child] = []
    database = None
    try:
        up_port = free_port()
        upstream = Child("fake upstream", [sys.executable, str(HERE / "fast_upstream.py"), "--port", str(up_port)], tmp / "upstream.log", HERE)
        children.append(upstream)
        up_url = f"http://127.0.0.1:{up_port}"
        wait_http(up_url + "/v1/chat/completions", upstream, method="POST", body=request_body(False))
        pids = {"upstream": upstream.pid}
        redis = args.redis
        if redis is None:
            port = free_port()
            argv = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp)]
            children.append(Child("redis", argv, tmp / "redis.log", tmp))
            redis = f"redis://127.0.0.1:{port}/0"
            deadline = time.monotonic() + 10
            while True:
                try:
                    pids["redis"] = await redis_pid(redis) or 0
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.1)
        plugins = tmp / "plugins.toml"
        plugins.write_text(BENCH_PLUGINS)
        db = tmp / "relaygate.db"
        say(args, "seeding through the relaygate CLI, then copy-store to a fresh PostgreSQL database ...")
        secrets = [seed(db, tmp, plugins, up_url, False, key_options=KEY_LIMITS), *await more_users(db, plugins, args.users - 1)]
        database = await pg_column.fresh_database(args.postgres)
        say(args, pg_column.copy_store(relaygate_command(), db, database, plugins))
        dbs = {"sqlite": str(db), "pg": database}
        for name in args.configs:
            say(args, f"{name}: {CONFIGS[name][1]} replica(s), concurrency {args.concurrency} ...")
            result["runs"].append(await run_config(name, args, tmp, dbs, plugins, secrets, pids, redis))
    finally:
        for child in reversed(children):
            child.stop()
        if database is not None:
            await pg_column.drop_database(args.postgres, database)
        shutil.rmtree(tmp, ignore_errors=True)
    runs = {r["config"]: r for r in result["runs"]}
    base = runs.get("pg+redis x1")
    if base and base["rps"]:
        result["scaling"] = {
            name: {"rps_ratio": round(runs[name]["rps"] / base["rps"], 2),
                   "gateway_cpu_per_req_ratio": round(runs[name]["gateway_cpu_ms_per_req"] / base["gateway_cpu_ms_per_req"], 2)}
            for name in ("pg+redis x2", "pg+redis x3", "pg+redis w2") if name in runs
        }  # fmt: skip
    if base and "pg" in runs:
        result["redis_gateway_cpu_ms_per_req"] = round(base["gateway_cpu_ms_per_req"] - runs["pg"]["gateway_cpu_ms_per_req"], 3)
    return result


def print_table(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"\nmachine: {m['cpu_model']}, {m['cpus_available']} CPU(s) available, load average at the end {os.getloadavg()}")
    head = f"{'config':<13} {'rps':>7} {'p50 ms':>7} {'p99 ms':>7} {'gw ms/req':>9} {'redis':>6} {'pg':>6} {'upstr':>6} {'loadgen':>7} {'others %':>8}  busy % each"
    print(head)
    for r in result["runs"]:
        cells = [r["gateway_cpu_ms_per_req"], r["redis_cpu_ms_per_req"], r["postgres_cpu_ms_per_req"], r["upstream_cpu_ms_per_req"]]
        text = " ".join(f"{'-' if v is None else v:>{w}}" for v, w in zip(cells, (9, 6, 6, 6)))
        print(f"{r['config']:<13} {r['rps']:>7} {r['p50_ms']:>7} {r['p99_ms']:>7} {text} {r['loadgen_cpu_ms_per_req']:>7} {r['foreign_cpu_pct']:>8}  {r['gateway_busy_pct_each']}")
        if r["errors"] or not r["usage_log_complete"]:
            print(f"  problems: {r['errors']} error(s) {r['error_kinds']}; usage rows {r['usage_rows']} of {r['requests_sent']} requests")
    for name, s in result.get("scaling", {}).items():
        print(f"{name} vs pg+redis x1: {s['rps_ratio']}x the requests per second, {s['gateway_cpu_per_req_ratio']}x the gateway CPU per request")
    if "redis_gateway_cpu_ms_per_req" in result:
        print(f"Redis round trips on the gateway: {result['redis_gateway_cpu_ms_per_req']} ms of CPU per request (pg+redis x1 - pg)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import uvloop

    result = uvloop.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    bad = [r for r in result["runs"] if r["errors"] or not r["usage_log_complete"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
