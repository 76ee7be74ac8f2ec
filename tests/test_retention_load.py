"""Pruning under load, on SQLite and on PostgreSQL: a gateway answers a burst of
requests while ``relaygate logs prune`` deletes a month of old usage rows in small
batches and a rollup folds the new rows into the hourly totals; afterwards every
request is billed exactly once (one usage row, one capture), ``relaygate check``
is clean, the old rows are gone, the ledger and audit log lost nothing, and the
dashboards' totals are what they were plus the burst."""

from __future__ import annotations

import asyncio
import random
import time

import attrs
import openai
import pytest

from gateway_core.admin import Admin, retention
from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.commands.cli import main
from gateway_core.base.retention import Retention
from gateway_core.store import CORE_MIGRATIONS
from gateway_core.testing.stores import open_admin
from gateway_openai.fake_upstream import Fault, FakeOpenAI

LOAD = ("openai", "demo")
REQUESTS = 150
OLD_ROWS = 6000  # over the 30 days before the burst; a third younger than the retention
DAYS = 10
HOUR, DAY = 3600, 86_400
CHAT = [{"role": "user", "content": "one two three four"}]


@pytest.fixture
def relaygate_config(tmp_path, db_url):
    return kit.config(tmp_path, LOAD, db=db_url)


@pytest.fixture
async def upstream(fake_upstream):
    fake = await fake_upstream(FakeOpenAI())
    for _ in range(REQUESTS):  # answers take a while: settlements overlap the prune's batches
        fake.fail_next(Fault(first_byte_delay=0.05))
    return fake


def plugins_file(tmp_path) -> str:
    path = tmp_path / "plugins.toml"
    path.write_text(
        "load = [" + ", ".join(f'"{name}"' for name in LOAD) + "]\n\n"
        f"[retention]\nusage_days = {DAYS}\nbatch_rows = 100\nbatch_pause_seconds = 0.05\n"
    )
    return str(path)


def old_rows(user_id: int, key_id: int, now: float) -> list[dict]:
    rng = random.Random(3)
    return [
        {"request_id": f"old_{n}", "created_at": now - rng.uniform(HOUR, 30 * DAY), "user_id": user_id, "key_id": key_id,
         "model": rng.choice((MODEL, "other")), "channel_name": "up", "status": rng.choice((200, 200, 429)),
         "input_tokens": rng.randrange(100), "output_tokens": rng.randrange(100), "cost_micros": rng.randrange(1000)}
        for n in range(OLD_ROWS)
    ]  # fmt: skip


async def one_request(client: openai.AsyncOpenAI, n: int) -> tuple[int, str]:
    stream = n % 3 == 0
    raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=20, stream=stream)
    answer = raw.parse()
    if stream:
        assert [chunk async for chunk in answer]
    return raw.status_code, raw.headers["x-request-id"]


async def burst(base_url: str, secret: str) -> list[tuple[int, str]]:
    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=secret, max_retries=0, timeout=60)
    try:
        results: list[tuple[int, str]] = []
        for wave in range(0, REQUESTS, 30):  # waves, so that requests settle all along the prune
            results += await asyncio.gather(*(one_request(client, n) for n in range(wave, min(wave + 30, REQUESTS))))
        return results
    finally:
        await client.close()


async def totals(port, since: float) -> dict[str, list[tuple]]:
    found = {by: sorted(attrs.astuple(t) for t in await port.usage_totals(by, since, 100)) for by in ("model", "user", "channel")}
    series = await port.usage_totals("time", since, 100, until=since + 32 * DAY, bucket=DAY)
    found["time"] = sorted(attrs.astuple(t) for t in series)
    return found


async def test_pruning_while_the_gateway_serves(tmp_path, start_gateway, seed, relaygate_config, upstream, capsys):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=50)
    now = time.time()
    since = (now - 31 * DAY) // HOUR * HOUR  # on an hour: the same totals before and after pruning
    url = relaygate_config.db_path
    settings = Retention(usage_days=DAYS, batch_rows=100, batch_pause_seconds=0.01)
    async with open_admin(url, CORE_MIGRATIONS) as port:
        await _insert(port, old_rows(user_id, key_id, now))
        await retention.roll_up(Admin(port), settings, margin=0.0)  # nothing else writes yet
        before = await totals(port, since)
        ledger_before = seed.rows("SELECT id, amount_micros FROM ledger ORDER BY id")
        audit_before = seed.rows("SELECT id FROM audit_log ORDER BY id")
        old = [r["id"] for r in seed.rows("SELECT id FROM usage_logs WHERE created_at < ?", (settings.cutoff(now),))]
        assert len(old) > OLD_ROWS // 2
    topped_up = kit.balance_of(seed, user_id)

    gateway = start_gateway()
    capsys.readouterr()
    prune = asyncio.create_task(asyncio.to_thread(main, ["logs", "prune", "--db", url, "--plugins", plugins_file(tmp_path), "--json"]))
    async with open_admin(url, CORE_MIGRATIONS) as port:
        load = asyncio.create_task(burst(gateway.url, secret))
        while not load.done():  # a rollup folding the burst's rows as they are written (ids seen a second ago)
            await retention.roll_up(Admin(port), settings, margin=1.0)
            await asyncio.sleep(0.05)
        results = await load
        assert await prune == 0
        pruned = capsys.readouterr().out
        assert f'"pruned": {len(old)}' in pruned, pruned
        await retention.roll_up(Admin(port), settings, margin=0.0)  # the burst is over: every id is final
        after = await totals(port, since)

    answered = [request_id for status, request_id in results if status == 200]
    assert len(answered) == REQUESTS
    rows = {row["request_id"]: row for row in seed.rows("SELECT * FROM usage_logs WHERE request_id NOT LIKE 'old_%'")}
    assert sorted(rows) == sorted(answered)  # one row per request answered, none lost or doubled
    assert seed.rows("SELECT count(*) AS n FROM usage_logs WHERE created_at < ?", (settings.cutoff(now),))[0]["n"] == 0
    left = seed.rows("SELECT count(*) AS n FROM usage_logs WHERE request_id LIKE 'old_%'")[0]["n"]
    assert left == OLD_ROWS - len(old)

    # the ledger and the audit log kept every row they had, plus one capture per request
    ledger = seed.rows("SELECT id, amount_micros FROM ledger ORDER BY id")
    assert ledger[: len(ledger_before)] == ledger_before
    assert seed.rows("SELECT id FROM audit_log ORDER BY id")[: len(audit_before)] == audit_before
    charged = 0
    for request_id in answered:
        cost = rows[request_id]["cost_micros"]
        assert kit.ledger_of(seed, request_id) == [("capture", -cost)] and cost > 0
        charged += cost
    assert kit.balance_of(seed, user_id) == topped_up - charged
    kit.assert_invariants(seed)
    capsys.readouterr()
    assert main(["check", "--db", url, "--plugins", plugins_file(tmp_path), "--json"]) == 0, capsys.readouterr().out

    # the dashboards' totals: what they were, plus the burst
    burst_cost = sum(row["cost_micros"] for row in rows.values())
    by_model = {t[0]: t for t in after["model"]}
    was = {t[0]: t for t in before["model"]}
    assert by_model[MODEL][1] == was[MODEL][1] + REQUESTS and by_model[MODEL][4] == was[MODEL][4] + burst_cost
    assert by_model["other"] == was["other"]
    assert sum(t[1] for t in after["time"]) == sum(t[1] for t in before["time"]) + REQUESTS
    assert sum(t[4] for t in after["channel"]) == sum(t[4] for t in before["channel"]) + burst_cost


async def _insert(port, rows: list[dict]) -> None:
    """Old usage rows, written as the store writes them (through the plugins' SQL handle's twin: the admin port's store)."""
    store = port._store
    columns = list(rows[0])
    sql = f"INSERT INTO usage_logs ({', '.join(columns)}, protocol, endpoint) VALUES ({', '.join('?' for _ in columns)}, 'openai', 'chat')"
    values = [tuple(row[c] for c in columns) for row in rows]
    if hasattr(store, "write"):
        await store.write(lambda conn: conn.executemany(sql, values) and None)
        return
    from relaygate_postgres.migrate import numbered

    async def insert(conn, attempt) -> None:
        await conn.executemany(numbered(sql), values)

    await store.run("test.insert", insert, write=True)


async def test_serve_prunes_on_its_own(tmp_path, start_gateway, seed, relaygate_config, upstream):
    """The job each serve process runs every [retention] interval_seconds: old rows go,
    the ledger stays, and requests keep being answered and billed meanwhile."""
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=50)
    now = time.time()
    settings = Retention(usage_days=DAYS, batch_rows=200, batch_pause_seconds=0.01, interval_seconds=0.2)
    async with open_admin(relaygate_config.db_path, CORE_MIGRATIONS) as port:
        await _insert(port, old_rows(user_id, key_id, now))
        await retention.roll_up(Admin(port), settings, margin=0.0)  # on PostgreSQL the job folds ids a minute after seeing them
    ledger = seed.rows("SELECT count(*) AS n FROM ledger")[0]["n"]
    gateway = start_gateway(attrs.evolve(relaygate_config, retention=settings))
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, timeout=60)
    try:
        answered = [await one_request(client, n) for n in range(5)]
    finally:
        await client.close()
    deadline = time.monotonic() + 20
    while seed.rows("SELECT count(*) AS n FROM usage_logs WHERE created_at < ?", (settings.cutoff(now),))[0]["n"]:
        assert time.monotonic() < deadline, "serve's retention job pruned nothing"
        await asyncio.sleep(0.1)
    assert {status for status, _ in answered} == {200}
    assert seed.rows("SELECT count(*) AS n FROM usage_logs WHERE request_id NOT LIKE 'old_%'")[0]["n"] == 5
    assert seed.rows("SELECT count(*) AS n FROM ledger")[0]["n"] == ledger + 5
    kit.assert_invariants(seed)
