"""Budgets that reset, over real HTTP with a clock the test moves (spend is
captured at the real time, in its hour's bucket): a key's daily budget refuses at
its cap naming the budget and its reset (Retry-After when near), and serves again
once the window turns at local midnight; a user's weekly budget; calendar windows
in a time zone (DST, month ends); rolling windows that slide by the hour."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any
from zoneinfo import ZoneInfo

import aiohttp
import openai
import orjson
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.budgets import calendar_window
from gateway_core.billing.cost import max_cost_micros
from gateway_core.billing.testing import MODEL
from gateway_core.config import ConfigError, config_from_mapping
from gateway_core.store.limits import set_key_limits, set_user_limits
from gateway_core.tally import estimate_tokens
from gateway_openai.fake_upstream import FakeOpenAI

PARIS = ZoneInfo("Europe/Paris")
BODY = orjson.dumps({"model": MODEL, "messages": [{"role": "user", "content": "one two three"}], "max_tokens": 50})
RESERVATION = max_cost_micros(kit.PRICE, 1_000_000, input_tokens=estimate_tokens(len(BODY)), max_output_tokens=50)


class Clock:
    def __init__(self, when: dt.datetime) -> None:
        self.now = when.timestamp()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("openai", "demo"), budget_timezone="Europe/Paris")


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


async def post(gateway, secret: str) -> tuple[int, Any, dict]:
    async with aiohttp.ClientSession() as http:
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        async with http.post(gateway.url + "/v1/chat/completions", data=BODY, headers=headers) as response:
            return response.status, response.headers.copy(), await response.json()


def utc_text(when: float) -> str:
    return dt.datetime.fromtimestamp(when, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


async def spent(seed, subject: str) -> int:
    return seed.rows("SELECT coalesce(sum(spent_micros), 0) AS spent FROM budget_buckets WHERE subject = ?", (subject,))[0]["spent"]


async def test_a_keys_daily_budget_refuses_at_its_cap_and_resets_at_local_midnight(start_gateway, seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    seed._write(set_key_limits, key_id, {"daily_budget_micros": RESERVATION})  # room for one reservation
    gateway = start_gateway()
    # spend is counted in the hour it is captured (real time); the window is the clock's day in Paris
    midnight = calendar_window("daily", time.time(), "Europe/Paris")[1]
    clock = gateway.services.clock = Clock(dt.datetime.fromtimestamp(midnight - 600, PARIS))

    status, _, _ = await post(gateway, secret)
    assert status == 200  # 0 + the reservation fits; it settles to its (smaller) cost
    status, headers, answer = await post(gateway, secret)
    assert status == 429 and answer["error"]["code"] == "budget_exceeded"
    message = answer["error"]["message"]
    assert message.startswith("This API key's daily budget of ") and f"resets at {utc_text(midnight)} (in 10 minutes)" in message
    assert headers["retry-after"] == "600"
    # the same through the SDK: a RateLimitError naming the budget
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    with pytest.raises(openai.RateLimitError) as refused:
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=50)
    assert refused.value.code == "budget_exceeded"

    clock.now = midnight - 1
    assert (await post(gateway, secret))[0] == 429  # still the same day in Paris
    cost = seed.rows("SELECT cost_micros FROM usage_logs WHERE status = 200")[0]["cost_micros"]
    assert await spent(seed, f"k:{key_id}") == await spent(seed, f"u:{user_id}") == cost  # the settled cost, not the reservation
    clock.now = midnight
    assert (await post(gateway, secret))[0] == 200  # a new day: a new window
    kit.assert_invariants(seed)
    await client.close()


async def test_a_users_weekly_budget_names_the_user_and_its_reset(start_gateway, seed, upstream):
    user_id, _, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    seed._write(set_user_limits, user_id, {"weekly_budget_micros": RESERVATION})
    gateway = start_gateway()
    now = time.time()
    monday = calendar_window("weekly", now, "Europe/Paris")[1]
    assert dt.datetime.fromtimestamp(monday, PARIS).strftime("%a %H:%M") == "Mon 00:00"
    assert (await post(gateway, secret))[0] == 200
    status, headers, answer = await post(gateway, secret)
    assert status == 429 and answer["error"]["message"].startswith("Your weekly budget of ")
    assert f"resets at {utc_text(monday)}" in answer["error"]["message"]
    assert ("retry-after" in headers) == (monday - now <= 3600)


def test_calendar_windows_follow_the_time_zone():
    def at(*fields: int) -> float:
        return dt.datetime(*fields, tzinfo=PARIS).timestamp()

    # the day DST starts in Paris has 23 hours
    assert calendar_window("daily", at(2026, 3, 29, 12), "Europe/Paris") == (at(2026, 3, 29), at(2026, 3, 30))
    assert at(2026, 3, 30) - at(2026, 3, 29) == 23 * 3600
    assert calendar_window("weekly", at(2026, 3, 29, 12), "Europe/Paris") == (at(2026, 3, 23), at(2026, 3, 30))  # Monday to Monday
    assert calendar_window("monthly", at(2026, 2, 28, 23, 59), "Europe/Paris") == (at(2026, 2, 1), at(2026, 3, 1))
    assert calendar_window("monthly", at(2026, 12, 31, 23), "Europe/Paris") == (at(2026, 12, 1), at(2027, 1, 1))
    assert calendar_window("daily", dt.datetime(2026, 3, 10, 23, 30, tzinfo=dt.timezone.utc).timestamp(), "Europe/Paris")[0] == at(2026, 3, 11)


def test_budget_settings():
    assert config_from_mapping({"gateway": {"budget_window": "rolling", "budget_timezone": "Asia/Kolkata"}}).budget_window == "rolling"
    for bad in ({"budget_window": "hourly"}, {"budget_timezone": "Mars/Olympus"}):
        with pytest.raises(ConfigError):
            config_from_mapping({"gateway": bad})


@pytest.fixture
def rolling_config(tmp_path):
    return kit.config(tmp_path, ("openai", "demo"), budget_window="rolling")


async def test_a_rolling_window_slides_hour_by_hour(start_gateway, seed, upstream, rolling_config):
    _, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    seed._write(set_key_limits, key_id, {"daily_budget_micros": RESERVATION})
    gateway = start_gateway(rolling_config)
    assert (await post(gateway, secret))[0] == 200
    hour = seed.rows("SELECT hour FROM budget_buckets WHERE subject = ?", (f"k:{key_id}",))[0]["hour"]
    leaves = (hour + 24) * 3600  # the spend's hour leaves the last 24 hours
    clock = gateway.services.clock = Clock(dt.datetime.fromtimestamp(leaves - 3600, dt.timezone.utc))
    status, headers, answer = await post(gateway, secret)  # midnight may have passed, the 24 hours have not
    assert status == 429 and f"resets at {utc_text(leaves)} (in 60 minutes)" in answer["error"]["message"]
    assert headers["retry-after"] == "3600"
    clock.now = leaves - 1
    assert (await post(gateway, secret))[0] == 429
    clock.now = leaves
    assert (await post(gateway, secret))[0] == 200
