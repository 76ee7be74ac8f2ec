"""Request latency while the usage log is pruned: a gateway on SQLite answers 8
clients on a priced demo model for 8 s, then 8 s more while ``retention.prune``
deletes 100,000 rows older than 30 days (the defaults: 500 rows a batch, 0.05 s
between batches), and prints the latency's median, 99th percentile and worst of each.

    .venv/bin/python bench/prune_under_load.py
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402

from gateway_core.admin import Admin, retention  # noqa: E402
from gateway_core.config import Config  # noqa: E402
from gateway_core.base.retention import Retention  # noqa: E402
from gateway_core.store import CORE_MIGRATIONS  # noqa: E402
from gateway_core.testing.stores import open_admin  # noqa: E402
from gateway_core.testing import GatewayThread, Seed  # noqa: E402

DB = "/tmp/relaygate-prune-bench.db"
OLD_ROWS = 100_000
CLIENTS = 8
SECONDS = 8.0


def prepare(config: Config) -> str:
    """A new store with a priced demo model, a user's key (returned) and OLD_ROWS old usage rows."""
    for suffix in ("", "-wal", "-shm", "-writer"):
        Path(DB + suffix).unlink(missing_ok=True)
    with Seed(config) as seed:
        seed.channel("demo", type="demo", base_url="local://demo", models=["demo-chat"])
        seed.price("demo-chat", 1_000_000, 2_000_000)
        user = seed.user("alice", balance_usd=1000)
        _, secret = seed.key(user)
    now, rng = time.time(), random.Random(1)
    conn = sqlite3.connect(DB)
    with conn:
        conn.executemany(
            "INSERT INTO usage_logs (request_id, created_at, user_id, key_id, model, status, cost_micros, protocol, endpoint) "
            "VALUES (?, ?, ?, 1, 'demo-chat', 200, 5, 'openai', 'chat')",
            [(f"old_{n}", now - rng.uniform(31, 60) * 86400, user) for n in range(OLD_ROWS)],
        )
    conn.close()
    return secret


async def load(url: str, secret: str, seconds: float) -> list[float]:
    """Milliseconds of each request CLIENTS clients make one after the other for ``seconds``."""
    latencies: list[float] = []
    body = {"model": "demo-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    async with aiohttp.ClientSession(headers={"authorization": f"Bearer {secret}"}) as http:
        end = time.monotonic() + seconds

        async def client() -> None:
            while time.monotonic() < end:
                started = time.perf_counter()
                async with http.post(url + "/v1/chat/completions", json=body) as response:
                    await response.read()
                    assert response.status == 200, response.status
                latencies.append((time.perf_counter() - started) * 1000)

        await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return latencies


def show(name: str, latencies: list[float]) -> None:
    ordered = sorted(latencies)
    print(f"{name:<15} {len(ordered):>6} {statistics.median(ordered):9.2f} {ordered[int(len(ordered) * 0.99)]:9.2f} {ordered[-1]:9.1f}")


async def main() -> None:
    config = Config(db_path=DB, load=("openai", "demo"))
    secret = prepare(config)
    gateway = GatewayThread(config).start()
    try:
        async with open_admin(DB, CORE_MIGRATIONS) as port:
            started = time.perf_counter()
            await retention.roll_up(Admin(port), Retention(batch_pause_seconds=0), margin=0.0)
            print(f"{OLD_ROWS:,} old rows rolled up in {time.perf_counter() - started:.1f} s\n")
        await load(gateway.url, secret, 2)  # warm up
        print(f"{'':<15} {'requests':>6} {'p50 ms':>9} {'p99 ms':>9} {'worst ms':>9}")
        show("no prune", await load(gateway.url, secret, SECONDS))
        async with open_admin(DB, CORE_MIGRATIONS) as port:
            started = time.perf_counter()
            prune = asyncio.ensure_future(retention.prune(Admin(port), Retention(usage_days=30)))
            show("prune running", await load(gateway.url, secret, SECONDS))
            report = await prune
        print(f"\npruned {report.pruned:,} rows in {time.perf_counter() - started:.1f} s")
    finally:
        gateway.stop()


if __name__ == "__main__":
    asyncio.run(main())
