"""Three gateway processes on one PostgreSQL database and one Redis: a key disabled
with the CLI is refused by every one of them within a second, and a channel's
concurrency cap of 2 holds across the three, as the fake upstream counts."""

from __future__ import annotations

import asyncio
import time
from contextlib import ExitStack

import openai

from gateway_core.commands.cli import main
from gateway_core.runtime.plugins import collect
from gateway_core.config import Config
from gateway_core.secrets import hash_key, new_api_key
from relaygate_postgres.store import PostgresStore
from gateway_core.testing import GatewayProcess
from gateway_openai.fake_upstream import Fault, FakeOpenAI

from .conftest import Seeder

REDIS_URL = "redis://127.0.0.1:6379/0"
MODEL = "gpt-replicas"
CHAT: list = [{"role": "user", "content": "hello"}]


async def ask(url: str, secret: str) -> int:
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key=secret, max_retries=0, timeout=20) as client:
        try:
            await client.chat.completions.create(model=MODEL, messages=CHAT)
            return 200
        except openai.APIStatusError as error:
            return error.status_code


async def test_three_processes_share_invalidations_and_a_channel_cap(pg_url, fake_upstream, redis_prefix, tmp_path, monkeypatch):
    upstream = await fake_upstream(FakeOpenAI())
    upstream.fail_next(*[Fault(first_byte_delay=0.3)] * 12)  # the first twelve answers held a while
    await PostgresStore(pg_url).migrate()
    seed = await Seeder.open(pg_url)
    base_url = collect(Config(load=("openai",))).channel_type("openai").normalize_base_url(upstream.url)
    await seed.channel("capped", type="openai", base_url=base_url, models=[MODEL], concurrency=2)
    await seed.price(MODEL, 0, 0, free=1)
    user_id = await seed.user()
    secret = new_api_key()
    key_id = await seed.key(user_id, hash_key(secret))
    await seed.close()
    plugins = tmp_path / "plugins.toml"
    plugins.write_text(f'load = ["openai", "demo"]\n[gateway]\nredis_prefix = "{redis_prefix}"\n')
    env = {"RELAYGATE_REDIS": REDIS_URL}
    with ExitStack() as stack:
        gateways = [GatewayProcess(pg_url, plugins_file=str(plugins), env=env) for _ in range(3)]
        for gateway in gateways:
            stack.enter_context(gateway)
        statuses = await asyncio.gather(*(ask(gateways[i % 3].url, secret) for i in range(12)))
        assert upstream.most_in_flight == 2 and statuses.count(200) >= 2 and set(statuses) <= {200, 503}
        upstream.faults.clear()
        assert [await ask(g.url, secret) for g in gateways] == [200, 200, 200]  # the key cached as enabled
        monkeypatch.setenv("RELAYGATE_REDIS", REDIS_URL)  # the CLI publishes the change
        cli = ["--db", pg_url, "--plugins", str(plugins), "key", "disable", str(key_id)]
        done = await asyncio.to_thread(lambda: main(cli))
        assert done == 0
        disabled = time.monotonic()

        async def refused() -> bool:
            return [await ask(g.url, secret) for g in gateways] == [401, 401, 401]

        while not await refused():
            assert time.monotonic() - disabled < 1.0, "a gateway still accepts the disabled key"
            await asyncio.sleep(0.02)
