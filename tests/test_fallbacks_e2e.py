"""Model fallbacks through the real gateway over loopback HTTP, against fake
upstreams: when every channel of the model asked for fails before its first
byte, the group's (or the key's) fallback model serves, billed at its own
price, and the usage log keeps both models. Set through the admin layer and
the CLI."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import attrs
import openai
import orjson
import pytest

from gateway_core.admin import Admin
from gateway_core.admin import fallbacks
from gateway_core.admin.errors import Invalid, NotFound
from gateway_core.channel_type import Timeouts
from gateway_core.commands.cli import main
from gateway_core.config import Config
from gateway_openai.fake_upstream import Fault, FakeOpenAI

ASKED, FALLBACK, OTHER = "model-a", "model-b", "model-c"
CHAT: Any = [{"role": "user", "content": "one two three four"}]
# micro-USD per million tokens: 1 or 10 micro-USD a token in, 2 or 20 out
PRICES = {ASKED: (1_000_000, 2_000_000), FALLBACK: (10_000_000, 20_000_000), OTHER: (100_000_000, 200_000_000)}


@pytest.fixture
def config(relaygate_config) -> Config:
    return attrs.evolve(relaygate_config, timeouts=Timeouts(connect=1.0, first_byte=2.0, idle=1.0), breaker_last_resort=0)


@pytest.fixture
async def world(seed, fake_upstream):
    """Channels "a" (model-a), "b" (model-b) and "c" (model-c), each on its own
    fake upstream; alice with 10 USD and a key."""
    for model, (input_price, output_price) in PRICES.items():
        seed.price(model, input_price, output_price)
    upstreams = {}
    for name, model in (("a", ASKED), ("b", FALLBACK), ("c", OTHER)):
        upstreams[name] = await fake_upstream(FakeOpenAI())
        seed.channel(name, type="openai", base_url=upstreams[name].url, models=[model], free_unpriced=False)
    user_id = seed.user("alice", balance_usd=10)
    key_id, secret = seed.key(user_id)
    return upstreams, key_id, secret


def client(gateway, secret: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)


def last_row(seed) -> dict:
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    row["attempts"] = orjson.loads(row["attempts"])
    return row


def cost_of(row: dict, model: str) -> int:
    input_price, output_price = PRICES[model]
    return row["input_tokens"] * input_price // 1_000_000 + row["output_tokens"] * output_price // 1_000_000


async def set_fallback(gateway, model: str, fallback: str, **owner: Any) -> None:
    await gateway.on_loop(fallbacks.set_fallback(Admin.of(gateway.services), model, fallback, **owner))


async def test_when_every_channel_of_the_model_fails_its_groups_fallback_serves_at_its_price(seed, world, start_gateway, config):
    upstreams, _, secret = world
    gateway = start_gateway(config)
    await set_fallback(gateway, ASKED, FALLBACK, group="default")
    upstreams["a"].fail_next(Fault(status=500))
    answer = await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
    assert answer.choices[0].message.content == "echo: one two three four"
    assert upstreams["b"].requests[-1]["body"]["model"] == FALLBACK  # the fallback's name went upstream
    row = last_row(seed)
    assert (row["status"], row["model"], row["served_model"], row["upstream_model"], row["channel_name"]) == (200, ASKED, FALLBACK, FALLBACK, "b")
    assert [(a["channel"], a["status"]) for a in row["attempts"]] == [("a", 500), ("b", 200)]
    assert row["cost_micros"] == cost_of(row, FALLBACK) > cost_of(row, ASKED)
    balance = seed.rows("SELECT balance_micros FROM users WHERE name = 'alice'")[0]["balance_micros"]
    assert balance == 10_000_000 - row["cost_micros"]
    # the model served well: no fallback, the log says so
    await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
    row = last_row(seed)
    assert (row["model"], row["served_model"], row["channel_name"]) == (ASKED, None, "a")
    assert row["cost_micros"] == cost_of(row, ASKED)


async def test_a_keys_own_fallback_wins_over_its_groups(seed, world, start_gateway, config):
    upstreams, key_id, secret = world
    gateway = start_gateway(config)
    await set_fallback(gateway, ASKED, FALLBACK, group="default")
    await set_fallback(gateway, ASKED, OTHER, key_id=key_id)
    upstreams["a"].fail_next(Fault(status=503))
    api = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
    reply = await api.messages.create(model=ASKED, max_tokens=50, messages=CHAT)
    assert reply.content[0].text == "echo: one two three four"  # type: ignore[union-attr]
    row = last_row(seed)
    assert (row["protocol"], row["model"], row["served_model"], row["channel_name"]) == ("anthropic", ASKED, OTHER, "c")
    assert row["cost_micros"] == cost_of(row, OTHER)
    assert upstreams["b"].requests == []


async def test_a_model_whose_channels_are_all_out_goes_straight_to_its_fallback(seed, world, start_gateway, config):
    upstreams, _, secret = world
    gateway = start_gateway(attrs.evolve(config, breaker_failures=1, breaker_cooldown=30.0))
    upstreams["a"].fail_next(Fault(status=500))
    with pytest.raises(openai.InternalServerError):
        await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)  # no fallback yet: a opens
    await set_fallback(gateway, ASKED, FALLBACK, group="default")
    answer = await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
    assert answer.choices[0].message.content == "echo: one two three four"
    row = last_row(seed)
    assert (row["served_model"], [a["channel"] for a in row["attempts"]]) == (FALLBACK, ["b"])
    assert len(upstreams["a"].requests) == 1


async def test_no_fallback_after_the_first_byte_nor_for_the_clients_own_error(seed, world, start_gateway, config):
    upstreams, _, secret = world
    gateway = start_gateway(config)
    await set_fallback(gateway, ASKED, FALLBACK, group="default")
    upstreams["a"].fail_next(Fault(drop_after=2))
    stream = await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT, stream=True)
    with pytest.raises(openai.APIError):
        async for _ in stream:
            pass
    body = {"error": {"message": "max_tokens is too large", "type": "invalid_request_error", "param": "max_tokens", "code": None}}
    upstreams["a"].fail_next(Fault(status=400, body=body))
    with pytest.raises(openai.BadRequestError):
        await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
    assert upstreams["b"].requests == []
    assert [r["served_model"] for r in seed.rows("SELECT served_model FROM usage_logs ORDER BY id")] == [None, None]


async def test_a_fallback_that_cannot_be_billed_or_fails_too_is_not_a_way_out(seed, world, start_gateway, config):
    upstreams, _, secret = world
    seed.channel("d", type="openai", base_url=upstreams["b"].url, models=["unpriced-model"], free_unpriced=False)
    gateway = start_gateway(config)
    await set_fallback(gateway, ASKED, "unpriced-model", group="default")
    upstreams["a"].fail_next(Fault(status=500))
    with pytest.raises(openai.InternalServerError) as failed:
        await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
    assert failed.value.status_code == 502 and upstreams["b"].requests == []
    await set_fallback(gateway, ASKED, FALLBACK, group="default")
    upstreams["a"].fail_next(Fault(status=500))
    upstreams["b"].fail_next(Fault(status=500))
    with pytest.raises(openai.InternalServerError) as failed:
        await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
    row = last_row(seed)
    assert (row["status"], row["served_model"], [a["channel"] for a in row["attempts"]]) == (502, FALLBACK, ["a", "b"])
    assert row["cost_micros"] == 0


async def test_the_admin_layer_checks_what_it_is_given(seed, world, start_gateway, config):
    gateway = start_gateway(config)
    admin = Admin.of(gateway.services)
    for owner, error in (({}, Invalid), ({"group": "default", "key_id": 1}, Invalid), ({"group": "nobody"}, NotFound), ({"key_id": 999}, NotFound)):
        with pytest.raises(error):
            await gateway.on_loop(fallbacks.set_fallback(admin, ASKED, FALLBACK, **owner))
    with pytest.raises(Invalid):
        await gateway.on_loop(fallbacks.set_fallback(admin, ASKED, ASKED, group="default"))
    with pytest.raises(NotFound):
        await gateway.on_loop(fallbacks.remove_fallback(admin, ASKED, group="default"))


async def test_the_cli_sets_lists_and_removes_fallbacks(seed, world, start_gateway, config, capsys):
    upstreams, key_id, secret = world
    db = ["--db", config.db_path]
    assert main([*db, "fallback", "set", ASKED, FALLBACK, "--group", "default"]) == 0
    assert main([*db, "fallback", "set", ASKED, OTHER, "--key", str(key_id)]) == 0
    assert main([*db, "fallback", "set", ASKED, OTHER, "--group", "missing"]) == 1
    capsys.readouterr()
    assert main([*db, "--json", "fallback", "list"]) == 0
    listed = orjson.loads(capsys.readouterr().out)
    assert [(f["scope"], f["owner"], f["model"], f["fallback"]) for f in listed] == [("group", "default", ASKED, FALLBACK), ("key", str(key_id), ASKED, OTHER)]
    gateway = start_gateway(config)
    assert main([*db, "fallback", "remove", ASKED, "--key", str(key_id)]) == 0
    await asyncio.sleep(1.1)  # another process: the gateway sees it within its caches' second
    upstreams["a"].fail_next(Fault(status=500))
    await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
    assert last_row(seed)["served_model"] == FALLBACK


async def test_the_management_api_sets_lists_and_removes_fallbacks(seed, world, start_gateway, config, capsys):
    import aiohttp

    upstreams, key_id, secret = world
    seed.user("root", admin=True)
    assert main(["--db", config.db_path, "--json", "token", "create", "root", "--scope", "admin"]) == 0
    token = orjson.loads(capsys.readouterr().out)["token"]
    gateway = start_gateway(config)
    headers = {"authorization": f"Bearer {token}"}
    api = gateway.url + "/api/v1"
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.put(f"{api}/groups/default/fallbacks/{ASKED}", json={"fallback": FALLBACK}) as response:
            assert response.status == 200 and (await response.json())["fallback"] == FALLBACK
        async with http.put(f"{api}/keys/{key_id}/fallbacks/{ASKED}", json={"fallback": OTHER}) as response:
            assert response.status == 200
        async with http.put(f"{api}/groups/nobody/fallbacks/{ASKED}", json={"fallback": FALLBACK}) as response:
            assert response.status == 404
        async with http.put(f"{api}/groups/default/fallbacks/{ASKED}", json={"fallback": ASKED}) as response:
            assert response.status == 400
        async with http.get(f"{api}/fallbacks") as response:
            listed = await response.json()
        assert [(f["scope"], f["owner"], f["fallback"]) for f in listed] == [("group", "default", FALLBACK), ("key", str(key_id), OTHER)]
        upstreams["a"].fail_next(Fault(status=500))
        await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
        assert last_row(seed)["served_model"] == OTHER
        async with http.get(f"{api}/logs", params={"limit": "1"}) as response:
            logged = (await response.json())["items"][0]
        assert (logged["model"], logged["served_model"]) == (ASKED, OTHER)  # the log shows both
        async with http.delete(f"{api}/keys/{key_id}/fallbacks/{ASKED}") as response:
            assert response.status == 204
        upstreams["a"].fail_next(Fault(status=500))  # seen at once: the API tells the router
        await client(gateway, secret).chat.completions.create(model=ASKED, messages=CHAT)
        assert last_row(seed)["served_model"] == FALLBACK
        async with http.get(f"{api}/audit") as response:
            actions = [entry["action"] for entry in (await response.json())["items"]]
        assert actions.count("fallback.set") == 2 and actions.count("fallback.delete") == 1
