"""Team keys on the request path, on SQLite and PostgreSQL (docs/teams.md): concurrent
requests on a team's service key and a member's team key, against a team wallet that
covers only some of them. Every admitted request is charged once to the team's wallet
(never to the member's own balance), refused ones cost nothing, every usage row carries
the team, the ledger holds; a removed member's key is refused at once."""

from __future__ import annotations

import asyncio

import openai
import pytest

from gateway_core.admin import Admin
from gateway_core.admin import team_keys, teams
from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.store.team_records import TeamRecord
from gateway_openai.fake_upstream import Fault, FakeOpenAI

LOAD = ("openai", "demo")
REQUESTS = 120
CHAT = [{"role": "user", "content": "one two three four"}]
COVERED = 30  # the team's wallet covers about this many reservations at once


@pytest.fixture
def relaygate_config(tmp_path, db_url):
    return kit.config(tmp_path, LOAD, db=db_url)


@pytest.fixture
async def upstream(fake_upstream):
    fake = await fake_upstream(FakeOpenAI())
    for _ in range(REQUESTS):  # answers take a while: reservations overlap
        fake.fail_next(Fault(first_byte_delay=0.3))
    return fake


@pytest.fixture
def world(seed, upstream):
    """alice (10 USD of her own) is a member of team eng, whose wallet covers COVERED
    reservations; eng has a service key and alice a key in it."""
    alice_id, _, _ = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=10)
    team: TeamRecord = seed._admin(lambda port: teams.create_team(Admin(port), "eng"))
    seed._admin(lambda port: teams.set_member(Admin(port), team.id, alice_id, "member"))
    service, service_secret = seed._admin(lambda port: team_keys.create_team_key(Admin(port), team.id, service=True, name="ci"))
    alice = _Caller(alice_id)
    mine, my_secret = seed._admin(lambda port: team_keys.create_team_key(Admin(port), team.id, name="laptop", caller=alice))
    topped_up = kit.expected_cost(60, 20) * COVERED
    seed.topup(team.account_id, topped_up)
    return team, alice_id, (service, service_secret), (mine, my_secret), topped_up


class _Caller:
    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.is_admin = False


async def one_request(client: openai.AsyncOpenAI, n: int) -> tuple[int, str, str | None]:
    try:
        raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=20, stream=n % 4 == 0)
    except openai.APIStatusError as error:
        assert error.code != "insufficient_quota" or "Your team's wallet is too low" in error.message
        return error.status_code, error.response.headers["x-request-id"], error.code
    answer = raw.parse()
    if n % 4 == 0:
        assert [chunk async for chunk in answer]
    return raw.status_code, raw.headers["x-request-id"], None


async def burst(base_url: str, secrets: list[str]) -> list[tuple[int, str, str | None]]:
    clients = [openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=s, max_retries=0, timeout=30) for s in secrets]
    try:
        return await asyncio.gather(*(one_request(clients[n % len(clients)], n) for n in range(REQUESTS)))
    finally:
        for client in clients:
            await client.close()


async def test_concurrent_requests_on_team_keys_charge_the_team_wallet_exactly(start_gateway, seed, world, upstream):
    team, alice_id, (service, service_secret), (mine, my_secret), topped_up = world
    gateway = start_gateway()
    results = await burst(gateway.url, [service_secret, my_secret])
    admitted = [request_id for status, request_id, _ in results if status == 200]
    refused = [(request_id, code) for status, request_id, code in results if status != 200]
    assert admitted and refused, f"{len(admitted)} admitted: the team's wallet should cover only some"
    assert {code for _, code in refused} == {"insufficient_quota"}
    assert len(upstream.requests) == len(admitted)
    rows = {row["request_id"]: row for row in seed.rows("SELECT * FROM usage_logs")}
    assert len(rows) == REQUESTS and {row["team_id"] for row in rows.values()} == {team.id}
    charged = 0
    for request_id in admitted:
        row = rows[request_id]
        cost = kit.expected_cost(row["input_tokens"], row["output_tokens"])
        assert row["cost_micros"] == cost > 0 and row["user_id"] == team.account_id
        assert kit.ledger_of(seed, request_id) == [("capture", -cost)]
        charged += cost
    for request_id, _ in refused:
        assert rows[request_id]["cost_micros"] == 0 and kit.ledger_of(seed, request_id) == []
    assert kit.balance_of(seed, team.account_id) == topped_up - charged >= 0
    assert kit.key_used(seed, service.id) + kit.key_used(seed, mine.id) == charged
    assert kit.balance_of(seed, alice_id) == 10 * 1_000_000  # her own money is untouched
    assert seed.rows("SELECT * FROM holds") == []
    kit.assert_invariants(seed)


async def test_a_removed_members_team_key_is_refused_at_once(start_gateway, seed, world):
    team, alice_id, _, (_, my_secret), _ = world
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=my_secret, max_retries=0, timeout=30)
    try:
        await client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=5)
        await gateway.on_loop(teams.remove_member(Admin.of(gateway.services), team.id, alice_id))
        with pytest.raises(openai.AuthenticationError):
            await client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=5)
    finally:
        await client.close()


async def test_a_teams_budget_refuses_its_keys_with_budget_exceeded(start_gateway, seed, world):
    team, _, (_, service_secret), (_, my_secret), _ = world
    seed._admin(lambda port: teams.edit_team(Admin(port), team.id, limits={"daily_budget_micros": kit.expected_cost(60, 20) // 2}))
    gateway = start_gateway()
    for secret in (service_secret, my_secret):
        client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, timeout=30)
        try:
            with pytest.raises(openai.RateLimitError) as refused:
                await client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=20)
            assert refused.value.code == "budget_exceeded" and "Your team's daily budget" in refused.value.message
        finally:
            await client.close()
