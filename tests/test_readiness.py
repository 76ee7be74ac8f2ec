"""GET /healthz and GET /readyz over loopback HTTP: ready with a store, its migrations
and a channel; 503 naming what is wrong without a channel, with Redis unreachable,
and from the moment a shutdown starts (``relaygate serve`` sent SIGTERM, while it
still serves during ``shutdown_drain_seconds``). The store going away is tested on
PostgreSQL (tests/postgres/test_postgres_readiness.py)."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import attrs
import pytest

from gateway_core.testing import GatewayProcess, free_port

MODEL = "gpt-ready"


def get(url: str, method: str = "GET") -> tuple[int, dict]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            return response.status, json.loads(body) if body else {}
    except urllib.error.HTTPError as error:
        body = error.read()
        return error.code, json.loads(body) if body else {}


def test_ready_with_a_store_its_migrations_and_a_channel(seed, start_gateway):
    seed.channel("up", type="fake", base_url="http://127.0.0.1:9", models=[MODEL])
    gateway = start_gateway()
    assert get(gateway.url + "/healthz") == (200, {"name": "relaygate", "status": "ok"})
    status, body = get(gateway.url + "/readyz")
    assert status == 200, body
    assert body["status"] == "ready" and body["problems"] == {}
    assert body["checks"] == {"shutdown": "not started", "store": "ok", "migrations": "ok", "channels": "1 enabled"}
    assert get(gateway.url + "/readyz", "HEAD")[0] == 200


def test_not_ready_without_an_enabled_channel(seed, start_gateway):
    seed.channel("off", type="fake", base_url="http://127.0.0.1:9", models=[MODEL], enabled=False)
    gateway = start_gateway()
    status, body = get(gateway.url + "/readyz")
    assert status == 503
    assert body["status"] == "not_ready"
    assert list(body["problems"]) == ["channels"] and "none enabled" in body["problems"]["channels"]
    assert get(gateway.url + "/healthz")[0] == 200  # alive all the same
    assert get(gateway.url + "/readyz", "HEAD")[0] == 503


@pytest.mark.usefixtures("redis_prefix")  # the machine's Redis, and the Redis and metrics plugins
def test_redis_is_checked_when_configured(seed, start_gateway, relaygate_config):
    seed.channel("up", type="fake", base_url="http://127.0.0.1:9", models=[MODEL])
    gateway = start_gateway(attrs.evolve(relaygate_config, redis="redis://127.0.0.1:6379/0"))
    status, body = get(gateway.url + "/readyz")
    assert (status, body["checks"]["redis"]) == (200, "ok")
    with urllib.request.urlopen(gateway.url + "/metrics", timeout=10) as response:  # a scrape times a PING
        assert "relaygate_redis_round_trip_seconds_count 1.0" in response.read().decode()
    gone = start_gateway(attrs.evolve(relaygate_config, redis=f"redis://127.0.0.1:{free_port()}/0"))
    status, body = get(gone.url + "/readyz")
    assert status == 503
    assert list(body["problems"]) == ["redis"] and body["problems"]["redis"].startswith("unreachable")


@pytest.mark.usefixtures("bundled_adapters")  # relaygate serve, a child process, serves an openai channel
def test_readyz_turns_503_as_soon_as_a_shutdown_starts(seed, tmp_path: Path, relaygate_config):
    seed.channel("up", type="openai", base_url="http://127.0.0.1:9", models=[MODEL])
    plugins = tmp_path / "plugins.toml"
    plugins.write_text('load = ["openai"]\n[gateway]\nshutdown_drain_seconds = 3\n')
    gateway = GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins)).start()
    try:
        assert get(gateway.url + "/readyz")[0] == 200
        assert gateway.process is not None
        os.kill(gateway.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 2
        while True:
            status, body = get(gateway.url + "/readyz")
            if status == 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status == 503, body
        assert list(body["problems"]) == ["shutdown"] and "shutting down" in body["problems"]["shutdown"]
        assert get(gateway.url + "/healthz")[0] == 200  # still serving while it drains
        assert gateway.process.wait(timeout=20) == 0
    finally:
        gateway.kill()
