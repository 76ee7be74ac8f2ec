"""Replicas as real processes: ``relaygate serve`` on three ports over one
PostgreSQL database and one Redis, the fake OpenAI upstream in the test's
process, clients spread round-robin over the replicas.

- ``cluster``: ``await cluster(replicas=3, **gateway_settings)`` writes a
  ``plugins.toml`` (Redis with the test's own key prefix, plus the
  ``[gateway]`` settings given), starts the replicas at once and returns a
  :class:`Cluster`; every replica is killed at the end of the test.
- :class:`Cluster` seeds the database through the admin layer (what the CLI and
  the console call), sends requests and reads the books.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import attrs
import orjson
import pytest

from gateway_core.admin import Admin
from gateway_core.admin import channels, keys, prices, users, wallet
from gateway_core.billing.testing import INPUT, MODEL, OUTPUT
from gateway_core.runtime.plugins import collect
from gateway_core.config import config_from_mapping
from gateway_core.records import PriceRecord
from gateway_core.testing.stores import open_admin
from relaygate_postgres.migrate import numbered
from gateway_core.testing import GatewayProcess
from gateway_openai.fake_upstream import FakeOpenAI

REDIS_URL = "redis://127.0.0.1:6379/0"
PLUGINS = ["openai"]
CHAT = [{"role": "user", "content": "one two three four"}]


@attrs.define
class Answer:
    """One request's outcome as its client saw it."""

    replica: int
    status: int  # 0: no HTTP answer (connection refused or dropped)
    request_id: str | None = None
    code: str | None = None  # the error's code or type
    retry_after: str | None = None
    complete: bool = False  # the whole answer arrived (a stream: up to [DONE])


@attrs.define
class Cluster:
    url: str  # the PostgreSQL database
    replicas: list[GatewayProcess]
    upstream: FakeOpenAI
    session: aiohttp.ClientSession
    db: asyncpg.Connection

    async def admin(self, operation: Callable[[Admin], Awaitable[Any]]) -> Any:
        """Run an admin operation on the shared database, as ``relaygate`` commands do."""
        registry = collect(config_from_mapping({"load": PLUGINS}, db_path=self.url))
        async with open_admin(self.url, registry.migrations) as port:
            return await operation(Admin(port, registry.channel_types))

    async def seed(self, *, balance_micros: int = 10_000_000, limits: dict[str, int] | None = None, name: str = "alice") -> tuple[int, str]:
        """A user with ``balance_micros`` and a key (with ``limits``): the user's id
        and the key's secret."""

        async def setup(admin: Admin) -> tuple[int, str]:
            user = await users.create_user(admin, name)
            if balance_micros:
                await wallet.topup(admin, user.id, balance_micros, "test balance")
            _, secret = await keys.create_key(admin, user.id, limits=limits)
            return user.id, secret

        result: tuple[int, str] = await self.admin(setup)
        return result

    async def chat(self, n: int, secret: str, *, stream: bool = False, max_tokens: int = 20) -> Answer:
        """Request ``n`` goes to replica ``n % len(replicas)``."""
        replica = n % len(self.replicas)
        payload: dict[str, Any] = {"model": MODEL, "messages": CHAT, "max_tokens": max_tokens}
        if stream:
            payload |= {"stream": True, "stream_options": {"include_usage": True}}
        url = self.replicas[replica].url + "/v1/chat/completions"
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        try:
            async with self.session.post(url, data=orjson.dumps(payload), headers=headers) as response:
                answer = Answer(replica, response.status, response.headers.get("x-request-id"))
                body = await response.read()
        except (aiohttp.ClientError, asyncio.TimeoutError):
            return Answer(replica, 0)
        if response.status != 200:
            error = orjson.loads(body)["error"]
            answer.code, answer.retry_after = error.get("code") or error.get("type"), response.headers.get("retry-after")
            return answer
        answer.complete = body.endswith(b"data: [DONE]\n\n") if stream else "choices" in orjson.loads(body)
        return answer

    async def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return [dict(row) for row in await self.db.fetch(numbered(sql), *params)]

    async def value(self, sql: str, *params: Any) -> Any:
        return await self.db.fetchval(numbered(sql), *params)

    async def check(self) -> dict[str, Any]:
        """``relaygate check --json`` on the shared database (its own process): the report."""
        process = await asyncio.create_subprocess_exec(
            str(Path(_python()).parent / "relaygate"), "check", "--json", "--db", self.url,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await process.communicate()
        report: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
        report["exit_status"] = process.returncode
        return report


async def add_channel(admin: Admin, upstream: FakeOpenAI) -> None:
    """The channel to the fake upstream, serving :data:`MODEL` at its price."""
    await channels.add_channel(admin, {"name": "up", "type": "openai", "base_url": upstream.url, "models": [MODEL], "api_keys": [upstream.api_key]})
    await prices.set_price(admin, PriceRecord(MODEL, INPUT, OUTPUT))


def _python() -> str:
    import sys

    return sys.executable


StartCluster = Callable[..., Awaitable[Cluster]]


@pytest.fixture
async def cluster(pg_url: str, redis_prefix: str, tmp_path: Path, fake_upstream: Any) -> AsyncIterator[StartCluster]:
    started: list[GatewayProcess] = []
    closing: list[Any] = []

    async def start(replicas: int = 3, **gateway: Any) -> Cluster:
        upstream = await fake_upstream(FakeOpenAI())
        settings = {"redis": REDIS_URL, "redis_prefix": redis_prefix, "db_pool_size": 4, **gateway}
        plugins = tmp_path / "plugins.toml"
        plugins.write_text(f"load = {json.dumps(PLUGINS)}\n[gateway]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()))
        cluster = Cluster(pg_url, [], upstream, aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)), await asyncpg.connect(pg_url))
        closing.extend([cluster.session.close, cluster.db.close])
        await cluster.admin(lambda admin: add_channel(admin, upstream))  # migrates the new database too
        processes = [GatewayProcess(pg_url, plugins_file=str(plugins)) for _ in range(replicas)]
        started.extend(processes)
        await asyncio.gather(*(asyncio.to_thread(p.start, 60.0) for p in processes))
        cluster.replicas = processes
        return cluster

    yield start
    for process in started:
        process.kill()
    for close in closing:
        await close()


def statuses(answers: Sequence[Answer]) -> dict[int, int]:
    counted: dict[int, int] = {}
    for answer in answers:
        counted[answer.status] = counted.get(answer.status, 0) + 1
    return counted
