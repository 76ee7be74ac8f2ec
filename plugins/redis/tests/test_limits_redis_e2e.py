"""Limits shared through Redis over real HTTP: two gateways on one database and one
Redis count one key's requests as one, and answer 429 with the real Retry-After."""

from __future__ import annotations


import openai
import pytest
import redis.asyncio as aioredis

from gateway_core.config import Config, config_from_mapping
from relaygate_redis.limiter import RedisRateLimiter
from gateway_openai.fake_upstream import FakeOpenAI

REDIS_URL = "redis://127.0.0.1:6379/0"
MODEL = "gpt-test"
CHAT = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def prefix(redis_prefix):
    return redis_prefix


@pytest.fixture
def relaygate_config(tmp_path, prefix) -> Config:
    gateway = {"redis": REDIS_URL, "redis_prefix": prefix}
    return config_from_mapping({"load": ["openai", "demo"], "gateway": gateway}, db_path=str(tmp_path / "relaygate.db"))


async def test_two_gateways_share_one_keys_limit(start_gateway, seed, fake_upstream, relaygate_config, prefix):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL])
    seed.price(MODEL, 0, 0, free=True)
    _, key = seed.key(seed.user("alice"), limits={"rpm": 5})
    gateways = [start_gateway(), start_gateway()]
    assert all(isinstance(g.services.rate_limiter, RedisRateLimiter) for g in gateways)
    clients = [openai.AsyncOpenAI(base_url=g.url + "/v1", api_key=key, max_retries=0) for g in gateways]
    passed, refused = [], []
    for i in range(12):
        try:
            raw = await clients[i % 2].chat.completions.with_raw_response.create(model=MODEL, messages=CHAT)
            passed.append(raw.headers["x-ratelimit-remaining-requests"])
        except openai.RateLimitError as error:
            refused.append(error.response.headers)
    assert passed == ["4", "3", "2", "1", "0"]  # one count, whichever gateway answered
    assert len(refused) == 7 and len(upstream.requests) == 5
    assert {h["retry-after"] for h in refused} == {"12"}  # 60 s / 5
    assert {h["x-ratelimit-remaining-requests"] for h in refused} == {"0"}
    client = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        assert [k async for k in client.scan_iter(match=f"{prefix}:*")]  # counted in Redis, not in memory
    finally:
        await client.aclose()


async def test_redis_down_while_serving_is_a_503_in_the_callers_shape(start_gateway, seed, fake_upstream, tmp_path):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL])
    seed.price(MODEL, 0, 0, free=True)
    _, limited = seed.key(seed.user("alice"), limits={"rpm": 5})
    _, unlimited = seed.key(seed.user("bob"))
    config = config_from_mapping(
        {"load": ["openai", "demo"], "gateway": {"redis": "redis://127.0.0.1:1/0"}}, db_path=str(tmp_path / "relaygate.db")
    )
    gateway = start_gateway(config)
    with pytest.raises(openai.APIStatusError) as caught:
        await openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=limited, max_retries=0).chat.completions.create(
            model=MODEL, messages=CHAT
        )
    assert caught.value.status_code == 503 and "rate-limit store" in caught.value.message
    assert len(upstream.requests) == 0
    sdk = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=unlimited, max_retries=0)
    assert (await sdk.chat.completions.create(model=MODEL, messages=CHAT)).choices  # no limits: Redis not asked


def test_redis_is_named_by_the_file_the_environment_or_the_flag(tmp_path, monkeypatch):
    from gateway_core.config import ConfigError, load_config

    plugins = tmp_path / "plugins.toml"
    plugins.write_text('[gateway]\nredis = "redis://127.0.0.1:6379/1"\nredis_fail_open = true\n')
    monkeypatch.delenv("RELAYGATE_REDIS", raising=False)
    config = load_config(str(tmp_path / "x.db"), plugins)
    assert (config.redis, config.redis_fail_open, config.redis_prefix) == ("redis://127.0.0.1:6379/1", True, "relaygate")
    monkeypatch.setenv("RELAYGATE_REDIS", "redis://127.0.0.1:6379/2")
    assert load_config(str(tmp_path / "x.db"), plugins).redis == "redis://127.0.0.1:6379/2"
    assert Config().redis is None  # without it: limits in each process's memory
    monkeypatch.setenv("RELAYGATE_REDIS", "127.0.0.1:6379")
    with pytest.raises(ConfigError, match="RELAYGATE_REDIS must be a Redis URL"):
        load_config(str(tmp_path / "x.db"), plugins)
    with pytest.raises(ConfigError, match="redis_fail_open must be true or false"):
        config_from_mapping({"gateway": {"redis": REDIS_URL, "redis_fail_open": "yes"}})


def test_serve_refuses_to_start_when_redis_is_unreachable(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    env = {"PATH": "/usr/bin:/bin", "RELAYGATE_DB": str(tmp_path / "relaygate.db"), "HOME": str(tmp_path)}
    command = [str(Path(sys.executable).parent / "relaygate"), "serve", "--port", "1", "--redis", "redis://127.0.0.1:1/0"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Redis at redis://127.0.0.1:1/0 is unreachable" in lines[0], done.stderr
