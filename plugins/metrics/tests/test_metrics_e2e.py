"""GET /metrics after real requests over loopback HTTP: a success, a stream, a failover,
a refusal by each policy, an unknown model; in one process and with ``--workers 2``
(the numbers must be the server's, not one worker's). Figures are checked against
the usage log the same requests left, and against what each request must count."""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from pathlib import Path

import attrs
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway_core.config import Config
from gateway_core.store import keys
from gateway_core.testing import GatewayProcess, Seed
from gateway_openai.fake_upstream import Fault, FakeOpenAI

MODEL = "gpt-metrics"
OTHER = "gpt-other"
CHAT = [{"role": "user", "content": "count me in please"}]
POLICIES = ("authentication", "key_state", "ip_allow", "model_access", "quota", "rate_limit")


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai",), breaker_failures=5)


@attrs.define
class Keys:
    good: str
    disabled: str
    elsewhere: str  # allowed only from another address
    other_model: str  # restricted to another model
    poor: str  # a quota far below one request's reservation
    limited: str  # one request per minute


async def upstreams(fake_upstream) -> tuple[FakeOpenAI, FakeOpenAI]:
    return await fake_upstream(FakeOpenAI()), await fake_upstream(FakeOpenAI())


def seed_gateway(seed: Seed, primary: FakeOpenAI, backup: FakeOpenAI) -> Keys:
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL, OTHER], priority=10)
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL, OTHER])
    for model in (MODEL, OTHER):
        seed.price(model, 2_000_000, 8_000_000)  # micro-USD per million tokens
    alice = seed.user("alice", balance_usd=10)
    disabled_id, disabled = seed.key(alice, name="disabled")
    seed._write(keys.set_key_enabled, disabled_id, False)
    return Keys(
        good=seed.key(alice, name="good")[1],
        disabled=disabled,
        elsewhere=seed.key(alice, name="elsewhere", allow_ips=["10.9.9.9"])[1],
        other_model=seed.key(alice, name="other", models=[OTHER])[1],
        poor=seed.key(alice, name="poor", quota_micros=1)[1],
        limited=seed.key(alice, name="limited", limits={"rpm": 1})[1],
    )


def client(url: str, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key=key, max_retries=0)


async def play(url: str, keys: Keys, primary: FakeOpenAI) -> None:
    """The requests every test below makes, with what each must answer."""
    good = client(url, keys.good)
    answer = await good.chat.completions.create(model=MODEL, messages=CHAT)
    assert answer.choices[0].message.content == "echo: count me in please"
    stream = await good.chat.completions.create(model=MODEL, messages=CHAT, stream=True, stream_options={"include_usage": True})
    assert [chunk async for chunk in stream][-1].usage is not None
    primary.fail_next(Fault(status=500))
    await good.chat.completions.create(model=OTHER, messages=CHAT)  # primary fails: the backup answers
    refusals = [
        (keys.good[:-4] + "zzzz", openai.AuthenticationError),
        (keys.disabled, openai.AuthenticationError),
        (keys.elsewhere, openai.PermissionDeniedError),
        (keys.other_model, openai.PermissionDeniedError),  # a model it may not use: 403
        (keys.poor, openai.RateLimitError),
    ]
    for key, refused in refusals:
        with pytest.raises(refused):
            await client(url, key).chat.completions.create(model=MODEL, messages=CHAT)
    with pytest.raises(openai.BadRequestError):  # no channel serves it: counted as model "other"
        await good.chat.completions.create(model="no-such-model-x1", messages=CHAT)
    status, _ = await asyncio.to_thread(post, url + "/v1/chat/completions", b"{not json", keys.good)
    assert status == 400  # the client's own mistake


def post(url: str, body: bytes, key: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


async def rate_limited(url: str, keys: Keys, tries: int) -> None:
    """``tries`` requests of a key allowed one a minute: all but the first refused (at least one)."""
    limited = client(url, keys.limited)
    refused = 0
    for _ in range(tries):
        try:
            await limited.chat.completions.create(model=MODEL, messages=CHAT)
        except openai.RateLimitError:
            refused += 1
    assert refused >= 1


def scrape(url: str, **headers: str) -> str:
    request = urllib.request.Request(url + "/metrics", headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
        return response.read().decode()


def total(text: str, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` whose labels include ``labels``."""
    found = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                found += sample.value
    return found


def expected_from_log(seed: Seed) -> dict[str, float]:
    rows = seed.rows("SELECT status, input_tokens, output_tokens, cost_micros, error_type, model FROM usage_logs")
    return {
        "requests": len(rows),
        "2xx": sum(1 for r in rows if r["status"] < 300),
        "4xx": sum(1 for r in rows if 400 <= r["status"] < 500),
        "input": sum(r["input_tokens"] for r in rows),
        "output": sum(r["output_tokens"] for r in rows),
        "cost": sum(r["cost_micros"] for r in rows),
        "rate_limited": sum(1 for r in rows if r["error_type"] == "rate_limit"),
        "bad_json": sum(1 for r in rows if r["error_type"] == "invalid_request" and r["model"] is None),
    }


def check(text: str, seed: Seed) -> None:
    """What the scenario must have counted: the same as the usage log, and each fact in its place."""
    log = expected_from_log(seed)
    assert total(text, "relaygate_requests_total") == log["requests"]
    assert total(text, "relaygate_requests_total", status_class="2xx") == log["2xx"]
    assert total(text, "relaygate_requests_total", status_class="4xx") == log["4xx"]
    assert total(text, "relaygate_requests_total", model=MODEL, channel="primary", status_class="2xx", group="default") >= 2
    assert total(text, "relaygate_requests_total", model="other") == 1
    assert "no-such-model-x1" not in text  # a client's free text is never a label
    for policy in POLICIES:
        assert total(text, "relaygate_errors_total", kind="policy", policy=policy) >= 1, policy
    assert total(text, "relaygate_errors_total", kind="policy", policy="rate_limit") == log["rate_limited"]
    assert total(text, "relaygate_rate_limit_refusals_total", group="default") == log["rate_limited"]
    assert total(text, "relaygate_errors_total", kind="client") == log["bad_json"] >= 1  # bodies that are not JSON
    assert total(text, "relaygate_errors_total", kind="upstream") == 0  # the failover hid the failure
    assert total(text, "relaygate_failovers_total", channel="primary") == 1
    assert total(text, "relaygate_upstream_attempt_duration_seconds_count", channel="primary", status_class="5xx") == 1
    assert total(text, "relaygate_upstream_attempt_duration_seconds_count", channel="backup", status_class="2xx") == 1
    assert total(text, "relaygate_tokens_total", kind="input") == log["input"] > 0
    assert total(text, "relaygate_tokens_total", kind="output") == log["output"] > 0
    assert total(text, "relaygate_cost_micro_usd_total") == log["cost"] > 0
    assert total(text, "relaygate_time_to_first_token_seconds_count", model=MODEL, channel="primary") >= 2
    assert total(text, "relaygate_request_duration_seconds_count") == log["requests"]
    assert total(text, "relaygate_requests_in_flight") == 0
    assert total(text, "relaygate_streams_in_flight") == 0
    assert total(text, "relaygate_holds_open") == 0
    assert total(text, "relaygate_store_round_trip_seconds_count", store="sqlite") >= 1
    assert total(text, "relaygate_store_commit_seconds_count", store="sqlite") >= 1


async def test_metrics_count_what_one_process_served(seed, fake_upstream, start_gateway):
    primary, backup = await upstreams(fake_upstream)
    keys = seed_gateway(seed, primary, backup)
    gateway = start_gateway()
    await play(gateway.url, keys, primary)
    await rate_limited(gateway.url, keys, 2)
    text = await asyncio.to_thread(scrape, gateway.url)
    check(text, seed)
    assert total(text, "relaygate_rate_limit_refusals_total") == 1
    assert total(text, "relaygate_requests_total", channel="backup") == 1


async def test_metrics_add_up_every_worker(seed, fake_upstream, relaygate_config, tmp_path: Path, relaygate_redis_prefix: str):
    primary, backup = await upstreams(fake_upstream)
    keys = seed_gateway(seed, primary, backup)
    plugins = tmp_path / "plugins.toml"  # several workers with limits set need Redis
    redis = f'redis = "redis://127.0.0.1:6379/0"\nredis_prefix = "{relaygate_redis_prefix}"\n'
    plugins.write_text('load = ["openai"]\n[gateway]\nbreaker_failures = 5\n' + redis)
    folder = tmp_path / "metrics"  # the operator's folder (a private one by default)
    env = {"PROMETHEUS_MULTIPROC_DIR": str(folder)}
    with GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins), workers=2, env=env) as gateway:
        await play(gateway.url, keys, primary)
        await rate_limited(gateway.url, keys, 4)  # one minute counted in Redis for both workers
        for _ in range(40):  # a new connection each: until both workers have served some
            if len(workers_that_served(folder)) == 2:
                break
            await asyncio.to_thread(post, gateway.url + "/v1/chat/completions", b"{not json", keys.good)
            await asyncio.sleep(0.1)
        deadline = time.monotonic() + 15
        while True:  # each worker hands its counts over every second; any worker may answer
            text = await asyncio.to_thread(scrape, gateway.url)
            try:
                check(text, seed)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.3)
        for _ in range(10):  # whichever worker answers, the sums are the same
            check(await asyncio.to_thread(scrape, gateway.url), seed)
        assert len(workers_that_served(folder)) == 2


def workers_that_served(folder: Path) -> set[str]:
    """The worker processes whose own files count requests."""
    from prometheus_client.mmap_dict import MmapedDict

    served = set()
    for path in folder.glob("counter_*.db"):
        for key, value, *_rest in MmapedDict.read_all_values_from_file(str(path)):
            if '"relaygate_requests_total"' in key and value > 0:
                served.add(path.stem)
    return served


@pytest.mark.parametrize(
    ("settings", "headers", "status"),
    [
        ({}, {}, 200),
        ({"metrics_token": "s3cret-token"}, {}, 401),
        ({"metrics_token": "s3cret-token"}, {"Authorization": "Bearer wrong"}, 401),
        ({"metrics_token": "s3cret-token"}, {"Authorization": "Bearer s3cret-token"}, 200),
        ({"metrics_allow": ("10.0.0.0/8",)}, {}, 403),
        ({"metrics_allow": ("10.0.0.0/8",), "trusted_proxies": ("127.0.0.1",)}, {"X-Forwarded-For": "10.1.2.3"}, 200),
        ({"trusted_proxies": ("127.0.0.1",)}, {"X-Forwarded-For": "203.0.113.9"}, 403),  # loopback only by default
    ],
)
def test_who_may_read_the_metrics(settings, headers, status, relaygate_config, seed, start_gateway):
    gateway = start_gateway(attrs.evolve(relaygate_config, **settings))
    try:
        text = scrape(gateway.url, **headers)
        got = 200
    except urllib.error.HTTPError as error:
        got = error.code
        text = error.read().decode()
    assert got == status, text
    if status == 200:
        assert "relaygate_requests_total" in text or "# HELP relaygate_requests_total" in text
    else:
        assert "relaygate_requests" not in text and "/metrics" in text


async def test_breakers_and_retries_are_counted(seed, fake_upstream, start_gateway, relaygate_config):
    primary, backup = await fake_upstream(FakeOpenAI(api_key=None)), await fake_upstream(FakeOpenAI())
    seed.channel("primary", type="openai", base_url=primary.url, models=[MODEL], priority=10, api_keys=["sk-a", "sk-b"])
    seed.channel("backup", type="openai", base_url=backup.url, models=[MODEL])
    _, secret = seed.key(seed.user("bob"))
    gateway = start_gateway(attrs.evolve(relaygate_config, breaker_failures=1, breaker_cooldown=0.3))
    chat = client(gateway.url, secret).chat.completions
    primary.fail_next(Fault(status=429, headers={"retry-after": "60"}))  # the first key rests: the other is tried
    await chat.create(model=MODEL, messages=CHAT)
    text = await asyncio.to_thread(scrape, gateway.url)
    first_key = primary.requests[0]["headers"]["Authorization"].removeprefix("Bearer ")
    position = str(["sk-a", "sk-b"].index(first_key))
    assert total(text, "relaygate_retries_total", channel="primary") == 1
    assert total(text, "relaygate_breaker_open", channel="primary", key=position) == 1
    assert total(text, "relaygate_breaker_open", channel="primary", key="channel") == 0
    primary.fail_next(Fault(status=500))  # the channel's own breaker opens: the backup answers
    await chat.create(model=MODEL, messages=CHAT)
    text = await asyncio.to_thread(scrape, gateway.url)
    assert total(text, "relaygate_breaker_open", channel="primary", key="channel") == 1
    assert total(text, "relaygate_failovers_total", channel="primary") == 1
    await asyncio.sleep(0.4)  # cooled down: the next request probes the primary, which answers
    await chat.create(model=MODEL, messages=CHAT)
    text = await asyncio.to_thread(scrape, gateway.url)
    assert total(text, "relaygate_breaker_open", channel="primary", key="channel") == 0
