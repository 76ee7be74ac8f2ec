"""Model fallbacks on PostgreSQL, end to end over loopback: set through the admin
layer of a gateway on PostgreSQL, served when the model asked for fails, billed
at the fallback's price, logged with both models (migration 0013 on this store)."""

from __future__ import annotations

import asyncio

import openai

from gateway_core.admin import Admin, fallbacks
from gateway_core.billing import testing as kit
from gateway_core.runtime.plugins import collect
from gateway_core.secrets import hash_key, new_api_key
from relaygate_postgres.store import PostgresStore
from gateway_openai.fake_upstream import Fault, FakeOpenAI

from .conftest import Seeder


async def test_a_fallback_serves_and_is_billed_at_its_price_on_postgresql(pg_url, fake_upstream, start_gateway, tmp_path):
    config = kit.config(tmp_path, ("openai",))
    asked, served = await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())
    await PostgresStore(pg_url).migrate()
    seed = await Seeder.open(pg_url)
    try:
        channel_type = collect(config).channel_type("openai")
        await seed.channel("a", type="openai", base_url=channel_type.normalize_base_url(asked.url), models=["model-a"])
        await seed.channel("b", type="openai", base_url=channel_type.normalize_base_url(served.url), models=["model-b"])
        await seed.price("model-a", 1_000_000, 2_000_000)
        await seed.price("model-b", 10_000_000, 20_000_000)
        user_id = await seed.user(balance_micros=10_000_000)
        secret = new_api_key()
        await seed.key(user_id, hash_key(secret))
        gateway = start_gateway(config, store=PostgresStore(pg_url, max_size=4))
        admin = Admin.of(gateway.services)
        await gateway.on_loop(fallbacks.set_fallback(admin, "model-a", "model-b", group="default"))
        assert [(f.scope, f.owner, f.fallback) for f in await gateway.on_loop(fallbacks.list_fallbacks(admin))] == [("group", "default", "model-b")]
        asked.fail_next(Fault(status=502))
        async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0) as api:
            raw = await api.chat.completions.with_raw_response.create(model="model-a", messages=[{"role": "user", "content": "one two"}])
        request_id = raw.headers["x-request-id"]
        for _ in range(100):
            rows = await seed.fetch("SELECT * FROM usage_logs WHERE request_id = ?", request_id)
            if rows:
                break
            await asyncio.sleep(0.05)
        row = rows[0]
        assert (row["model"], row["served_model"], row["channel_name"]) == ("model-a", "model-b", "b")
        assert row["cost_micros"] == row["input_tokens"] * 10 + row["output_tokens"] * 20
        assert await seed.balance(user_id) == 10_000_000 - row["cost_micros"]
        await gateway.on_loop(fallbacks.remove_fallback(admin, "model-a", group="default"))
        assert await gateway.on_loop(fallbacks.list_fallbacks(admin)) == []
    finally:
        await seed.close()
