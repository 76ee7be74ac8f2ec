"""Two gateway processes on one PostgreSQL database and one Redis (docs/teams.md): a
member's team key works on both, and once ``relaygate team member remove`` takes the
member out, both refuse it within a second (the CLI publishes the change; each gateway
forgets the team keys the member held)."""

from __future__ import annotations

import asyncio
import time
from contextlib import ExitStack

from gateway_core.admin import Admin, team_keys, teams, users
from gateway_core.commands.cli import main
from gateway_core.config import Config
from gateway_core.runtime.plugins import collect
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.admin import PostgresAdmin
from gateway_core.testing import GatewayProcess
from gateway_openai.fake_upstream import FakeOpenAI

from .conftest import Seeder
from .test_postgres_shared_redis import MODEL, REDIS_URL, ask


class _As:
    def __init__(self, user_id: int) -> None:
        self.user_id, self.is_admin = user_id, False


async def test_a_removed_members_key_stops_on_every_replica(pg_url, fake_upstream, redis_prefix, tmp_path, monkeypatch):
    upstream = await fake_upstream(FakeOpenAI())
    store = PostgresStore(pg_url)
    await store.migrate()
    await store.start()
    try:
        seed = await Seeder.open(pg_url)
        base_url = collect(Config(load=("openai",))).channel_type("openai").normalize_base_url(upstream.url)
        await seed.channel("up", type="openai", base_url=base_url, models=[MODEL])
        await seed.price(MODEL, 0, 0, free=1)
        await seed.close()
        admin = Admin(PostgresAdmin(store))
        dev = await users.create_user(admin, "dev")
        eng = await teams.create_team(admin, "eng")
        await teams.set_member(admin, eng.id, dev.id, "member")
        _, secret = await team_keys.create_team_key(admin, eng.id, name="laptop", caller=_As(dev.id))
    finally:
        await store.close()
    plugins = tmp_path / "plugins.toml"
    plugins.write_text(f'load = ["openai", "demo"]\n[gateway]\nredis_prefix = "{redis_prefix}"\n')
    with ExitStack() as stack:
        gateways = [stack.enter_context(GatewayProcess(pg_url, plugins_file=str(plugins), env={"RELAYGATE_REDIS": REDIS_URL})) for _ in range(2)]
        assert [await ask(g.url, secret) for g in gateways] == [200, 200]  # cached as working
        monkeypatch.setenv("RELAYGATE_REDIS", REDIS_URL)  # the CLI publishes the change
        done = await asyncio.to_thread(lambda: main(["--db", pg_url, "--plugins", str(plugins), "team", "member", "remove", "eng", "dev"]))
        assert done == 0
        removed = time.monotonic()
        while [await ask(g.url, secret) for g in gateways] != [401, 401]:
            assert time.monotonic() - removed < 1.0, "a gateway still accepts a removed member's key"
            await asyncio.sleep(0.02)
