"""Kept Responses answers on PostgreSQL: the gateway on a PostgresStore, an
anthropic fake upstream and the official openai SDK — a conversation continued by
``previous_response_id``, read, refused to another user, deleted; and the
store's port trimming a user's oldest answers and sweeping expired ones."""

from __future__ import annotations

import time

import openai
import pytest

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.billing import testing as kit
from gateway_core.secrets import hash_key, new_api_key
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.stored_responses import PostgresResponses
from gateway_core.kept_responses import StoredResponse

from .conftest import Seeder

MODEL = "claude-kept"


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("openai", "anthropic"), plugins={"openai": {"stored_responses": {"groups": ["default"]}}})


@pytest.fixture
async def claude(fake_upstream):
    return await fake_upstream(FakeAnthropic())


async def test_a_conversation_is_kept_on_postgresql(pg_url, claude, start_gateway):
    await PostgresStore(pg_url).migrate()
    seed = await Seeder.open(pg_url)
    try:
        await seed.channel("claude", type="anthropic", base_url=claude.url, models=[MODEL], api_keys=(ANTHROPIC_KEY,))
        await seed.price(MODEL, 0, 0, free=1)
        secrets = []
        for name in ("alice", "bob"):
            secret = new_api_key()
            await seed.key(await seed.user(name), hash_key(secret))
            secrets.append(secret)
        gateway = start_gateway(store=PostgresStore(pg_url, max_size=4))
        alice, bob = (openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=s, max_retries=0, timeout=30) for s in secrets)
        first = await alice.responses.create(model=MODEL, input="my name is Ada")
        second = await alice.responses.create(model=MODEL, input="what is my name?", previous_response_id=first.id)
        assert second.previous_response_id == first.id
        assert [m["role"] for m in claude.requests[-1]["body"]["messages"]] == ["user", "assistant", "user"]
        assert (await alice.responses.retrieve(second.id)).output_text == second.output_text
        with pytest.raises(openai.NotFoundError):
            await bob.responses.retrieve(second.id)
        await alice.responses.delete(second.id)
        with pytest.raises(openai.NotFoundError):
            await alice.responses.retrieve(second.id)
        rows = await seed.fetch("SELECT id, items FROM stored_responses")
        assert [row["id"] for row in rows] == [first.id] and rows[0]["items"] is not None
    finally:
        await seed.close()


async def test_the_port_trims_and_sweeps(pg_url):
    store = PostgresStore(pg_url)
    await store.migrate()
    await store.start()
    try:
        port = PostgresResponses(store)
        now = time.time()
        for n in range(4):
            record = StoredResponse(f"resp_{n}", 7, "m", now + n, now + 3600, "{}", "[]")
            await port.save(record, keep_per_user=2)
        assert [await port.get(f"resp_{n}", 7, now) is not None for n in range(4)] == [False, False, True, True]
        assert await port.get("resp_3", 8, now) is None  # another user's
        stale = StoredResponse("resp_old", 8, "m", now, now + 1, "{}", "[]")
        await port.save(stale, keep_per_user=2)
        assert await port.get("resp_old", 8, now + 2) is None
        assert await port.sweep(now + 2) == 1
        assert await port.delete("resp_3", 7) and not await port.delete("resp_3", 7)
    finally:
        await store.close()
