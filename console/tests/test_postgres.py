"""The console on a gateway whose store is PostgreSQL: signing in (its sessions
in the console's own table, through ``services.sql``), creating a key (through
the admin port) and reading the log of a request made with it."""

from __future__ import annotations

import re

import pytest

from gateway_core.admin import Admin, channels, prices, users, wallet
from gateway_core.config import Config
from gateway_core.runtime.plugins import collect
from gateway_core.records import PriceRecord
from gateway_core.testing.stores import open_admin

PASSWORD = "alice-password-1"


async def seed_alice(url: str) -> None:
    """An operator root (1 USD) and alice (10 USD), with console passwords, and the
    priced demo channel, through the admin layer."""
    registry = collect(Config(db_path=url))
    async with open_admin(url, registry.migrations) as port:
        admin = Admin(port, registry.channel_types)
        root = await users.create_user(admin, "root", is_admin=True, password=PASSWORD)
        await wallet.topup(admin, root.id, 1_000_000)
        alice = await users.create_user(admin, "alice", password=PASSWORD)
        await wallet.topup(admin, alice.id, 10_000_000)
        await channels.add_channel(admin, {"name": "demo", "type": "demo", "base_url": "local://demo", "models": ["demo-chat"]})
        await prices.set_price(admin, PriceRecord("demo-chat", 1_000_000, 2_000_000))


async def books_of(url: str) -> tuple[int, bool]:
    """alice's balance, and whether the money invariants hold."""
    registry = collect(Config(db_path=url))
    async with open_admin(url, registry.migrations) as port:
        admin = Admin(port, registry.channel_types)
        alice = await users.find_user(admin, "alice")
        return alice.balance_micros, (await wallet.check_ledger(admin)).ok


@pytest.fixture
async def gateway(relaygate_postgres_url, start_gateway):
    await seed_alice(relaygate_postgres_url)
    return start_gateway(Config(db_path=relaygate_postgres_url))


async def test_sign_in_create_a_key_and_see_its_request_in_the_logs(relaygate_postgres_url, gateway, browsers, openai_client):
    alice = await browsers()
    status, page = await alice.sign_in("alice", PASSWORD)
    assert status == 200 and "Sign out" in page
    status, page = await alice.post("/console/keys/new", {"name": "pg-console-key", "group": "default"}, csrf_from="/console/keys/new")
    # post/redirect/get: the secret rides in a cookie sealed for this session
    assert status == 200, page[:500]
    secret = re.search(r'<code id="secret">(sk-[^<]+)</code>', page).group(1)
    _, listing = await alice.get("/console/keys")
    assert "pg-console-key" in listing and secret not in listing
    reply = await openai_client(gateway.url, secret).chat.completions.create(
        model="demo-chat", messages=[{"role": "user", "content": "hello"}]
    )
    assert reply.choices[0].message.content
    status, logs = await alice.get("/console/logs")
    assert status == 200 and "demo-chat" in logs and "pg-console-key" in logs
    assert "<strong>1</strong> request<" in logs  # the filter's totals, counted by PostgreSQL
    request_id = re.search(r"<code class=\"small\">(req_[^<]+)</code>", logs).group(1)
    _, found = await alice.get(f"/console/logs?request={request_id}")
    assert found.count("data-log-id=") == 1
    status, exported = await alice.get("/console/logs/export.csv")
    assert status == 200 and exported.count(request_id) == 1
    _, ledger = await alice.get(f"/console/wallet?request={request_id}")
    assert ledger.count("data-ledger-id=") == 1  # the request's charge, found by its id
    balance, books_balance = await books_of(relaygate_postgres_url)
    assert 0 < balance < 10_000_000 and books_balance  # charged, and the ledger says so
    _, signed_out = await (await browsers(url=gateway.url)).get("/console/keys")
    assert "pg-console-key" not in signed_out  # another browser has no session


async def test_every_page_an_operator_reads_works_on_postgresql(gateway, browsers, openai_client):
    root = await browsers()
    status, page = await root.sign_in("root", PASSWORD)
    assert status == 200 and "Sign out" in page
    status, page = await root.post("/console/keys/new", {"name": "ops", "group": "default"}, csrf_from="/console/keys/new")
    secret = re.search(r'<code id="secret">(sk-[^<]+)</code>', page).group(1)
    await openai_client(gateway.url, secret).chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "x"}])
    _, logs = await root.get("/console/admin/logs")
    log_id = re.search(r'href="/console/admin/logs/(\d+)"', logs).group(1)
    for path in ("/console/", "/console/account", "/console/keys", "/console/logs", "/console/wallet", "/console/quickstart",
                 "/console/admin/channels", "/console/admin/channels/1/edit", "/console/admin/users", "/console/admin/users/2",
                 "/console/admin/groups", "/console/admin/prices", "/console/admin/usage", "/console/admin/logs",
                 f"/console/admin/logs/{log_id}"):  # fmt: skip
        status, page = await root.get(path)
        assert status == 200, (path, page[:300])
    status, page = await root.post("/console/admin/users/2/topup", {"amount": "2.5", "note": "console top-up"}, csrf_from="/console/admin/users/2")
    assert status == 200 and "12.50" in page, page[:500]
