"""compose.yaml brought up for real with podman-compose: PostgreSQL, Redis, the one-shot
migration, two gateway replicas and nginx (PostgreSQL, Redis and nginx from Debian's
packages on the local base image, on the host's loopback: tests/container/compose.test.yaml).
Requests in the OpenAI, Anthropic and Gemini protocols go through nginx; one replica is
killed half-way; every answered request is billed once and `relaygate check` is clean."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gateway_core.testing import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVICES = "localhost/relaygate-test-services:bookworm"
NGINX = """events {{}}
pid /tmp/nginx.pid;
error_log stderr;
http {{
    access_log off;
    upstream relaygate {{ server 127.0.0.1:{g1} max_fails=1 fail_timeout=5s; server 127.0.0.1:{g2} max_fails=1 fail_timeout=5s; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{ proxy_pass http://relaygate; proxy_http_version 1.1; proxy_buffering off;
                     proxy_next_upstream error timeout; proxy_next_upstream_tries 2; }}
    }}
}}
"""


@pytest.fixture(scope="session")
def services_image(podman: list[str], image: str) -> str:
    done = subprocess.run([*podman, "build", "--network=host", "--build-arg", "BASE=localhost/relaygate-test-base:bookworm",
                           "-t", SERVICES, "-f", str(ROOT / "tests/container/Containerfile.services"), str(ROOT / "tests/container")],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        (pytest.fail if os.environ.get("CI") == "true" else pytest.skip)(f"the services image did not build: {done.stderr[-2000:]}")
    return SERVICES


def _post(url: str, body: dict, headers: dict[str, str]) -> tuple[int, str | None]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status, response.headers.get("x-request-id")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("x-request-id")
    except OSError:
        return 0, None


def test_two_replicas_behind_nginx_bill_every_answer_once(podman: list[str], image: str, services_image: str, tmp_path: Path) -> None:
    compose_bin = Path(sys.executable).with_name("podman-compose")
    project = tmp_path / "stack"
    project.mkdir()
    shutil.copy(ROOT / "compose.yaml", project / "compose.yaml")
    shutil.copy(ROOT / "tests/container/compose.test.yaml", project / "compose.test.yaml")
    ports = {name: free_port() for name in ("TEST_PG_PORT", "TEST_REDIS_PORT", "TEST_GATEWAY_1_PORT", "TEST_GATEWAY_2_PORT", "TEST_NGINX_PORT")}
    db = f"postgresql://relaygate@127.0.0.1:{ports['TEST_PG_PORT']}/postgres"
    (project / "relaygate.env").write_text(
        f"RELAYGATE_DB={db}\nRELAYGATE_REDIS=redis://127.0.0.1:{ports['TEST_REDIS_PORT']}/0\n"
        "RELAYGATE_SECRET_KEY=compose-test-secret\nRELAYGATE_TRUSTED_PROXIES=127.0.0.1\n")  # fmt: skip
    (project / "nginx.test.conf").write_text(NGINX.format(g1=ports["TEST_GATEWAY_1_PORT"], g2=ports["TEST_GATEWAY_2_PORT"], port=ports["TEST_NGINX_PORT"]))
    name = f"rgtest{os.getpid()}"
    env = {**os.environ, **{key: str(value) for key, value in ports.items()}, "RELAYGATE_IMAGE": image,
           "POSTGRES_IMAGE": services_image, "REDIS_IMAGE": services_image, "NGINX_IMAGE": services_image}  # fmt: skip
    compose = [str(compose_bin), "--podman-args=--runtime runc --cgroup-manager cgroupfs", "-p", name, "-f", "compose.yaml", "-f", "compose.test.yaml"]
    tool = [*podman, "run", "--rm", "--network=host", "-e", f"RELAYGATE_DB={db}", "-e", "RELAYGATE_SECRET_KEY=compose-test-secret", image]
    try:
        # Debian's podman 4.3 has no "healthy" condition for podman-compose to wait on, and
        # its --requires refuses a finished one-shot service: the test starts the services
        # in compose.yaml's order itself, waiting for each condition as compose would
        def up(*services: str) -> None:
            done = subprocess.run([*compose, "up", "-d", "--no-deps", *services], cwd=project, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

        def wait_for(command: list[str]) -> None:
            deadline = time.monotonic() + 90
            while subprocess.run(command, capture_output=True).returncode != 0:
                assert time.monotonic() < deadline, f"{command} never succeeded"
                time.sleep(0.5)

        up("postgres", "redis")
        wait_for([*podman, "healthcheck", "run", f"{name}_postgres_1"])
        wait_for([*podman, "healthcheck", "run", f"{name}_redis_1"])
        up("migrate")
        assert subprocess.run([*podman, "wait", f"{name}_migrate_1"], capture_output=True, text=True).stdout.strip() == "0"
        up("gateway-1", "gateway-2")
        wait_for([*podman, "healthcheck", "run", f"{name}_gateway-1_1"])
        wait_for([*podman, "healthcheck", "run", f"{name}_gateway-2_1"])
        up("nginx")
        key = json.loads(subprocess.run([*tool, "init", "--json"], check=True, capture_output=True, text=True).stdout)["key"]
        url = f"http://127.0.0.1:{ports['TEST_NGINX_PORT']}"
        calls = [
            ("/v1/chat/completions", {"model": "demo-chat", "messages": [{"role": "user", "content": "Hi"}]}, {"Authorization": f"Bearer {key}"}),
            ("/v1/messages", {"model": "demo-chat", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]},
             {"x-api-key": key, "anthropic-version": "2023-06-01"}),
            ("/v1beta/models/demo-chat:generateContent", {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}, {"x-goog-api-key": key}),
        ]  # fmt: skip
        answered: list[str] = []
        statuses: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _post(url + calls[0][0], calls[0][1], calls[0][2])[0] != 200:
            time.sleep(1)  # the replicas' readiness: a channel exists once init ran
        for round_ in range(30):
            if round_ == 15:
                subprocess.run([*podman, "kill", f"{name}_gateway-1_1"], check=True, capture_output=True)
            for path, body, headers in calls:
                status, request_id = _post(url + path, body, headers)
                statuses.append(status)
                if status == 200:
                    assert request_id
                    answered.append(request_id)
        assert statuses.count(200) >= 80, statuses
        rows = json.loads(subprocess.run([*tool, "logs", "--json", "--limit", "1000"], check=True, capture_output=True, text=True).stdout)
        billed = [row["request_id"] for row in rows if row["status"] == 200]
        assert sorted(set(answered)) == sorted(answered)
        assert all(billed.count(request_id) == 1 for request_id in answered)
        check = subprocess.run([*tool, "check"], capture_output=True, text=True)
        assert check.returncode == 0 and "OK:" in check.stdout, check.stdout + check.stderr
    finally:
        subprocess.run([*compose, "down", "-v", "-t", "5"], cwd=project, env=env, capture_output=True, timeout=300)
