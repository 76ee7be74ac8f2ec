"""GET /readyz of a gateway on PostgreSQL: ready, then 503 naming the store once its
database is dropped under it (its sessions terminated), and 503 naming the
migration a database lacks."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.request

import attrs
import pytest

from gateway_core.config import Config
from gateway_core.runtime.plugins import collect
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.databases import drop_database

from .conftest import Seeder

MODEL = "gpt-ready"


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "unused.db"), load=("openai",))


@pytest.fixture
async def database(pg_url, relaygate_config) -> str:
    """A migrated database with one channel."""
    await PostgresStore(pg_url).migrate()
    seed = await Seeder.open(pg_url)
    base_url = collect(relaygate_config).channel_type("openai").normalize_base_url("http://127.0.0.1:9")
    await seed.channel("up", type="openai", base_url=base_url, models=[MODEL])
    await seed.close()
    return pg_url


def readyz(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=15) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def scrape(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=15) as response:
        return response.read().decode()


async def test_readyz_is_503_once_the_database_is_gone(database, postgres_server, relaygate_config, start_gateway):
    gateway = start_gateway(attrs.evolve(relaygate_config, db_path=database, db_timeout=1.0))
    status, body = await asyncio.to_thread(readyz, gateway.url)
    assert status == 200, body
    assert body["checks"]["store"] == "ok" and body["checks"]["channels"] == "1 enabled"
    metrics = await asyncio.to_thread(scrape, gateway.url)
    assert 'relaygate_store_round_trip_seconds_count{store="postgresql"} 1.0' in metrics
    assert "relaygate_holds_open 0.0" in metrics
    # the hold sweeper's first sweep, at start, is a write: timed until durable
    assert re.search(r'^relaygate_store_commit_seconds_count\{store="postgresql"\} [1-9]', metrics, re.M)
    assert 'relaygate_store_write_backlog{store="postgresql"} 0.0' in metrics
    await drop_database(postgres_server, database)  # WITH (FORCE): the gateway's sessions are terminated
    status, body = await asyncio.to_thread(readyz, gateway.url)
    assert status == 503
    assert body["problems"]["store"].startswith("unreachable")
    assert body["problems"]["migrations"] == "unknown: the store is unreachable"


async def test_readyz_names_a_migration_the_database_lacks(database, relaygate_config, start_gateway):
    gateway = start_gateway(attrs.evolve(relaygate_config, db_path=database))
    seed = await Seeder.open(database)
    await seed.execute("DELETE FROM schema_migrations WHERE name = ?", "0004_channel_health")
    await seed.close()
    status, body = await asyncio.to_thread(readyz, gateway.url)
    assert status == 503
    assert list(body["problems"]) == ["migrations"]
    assert body["problems"]["migrations"] == "pending: 0004_channel_health (run `relaygate migrate`)"
