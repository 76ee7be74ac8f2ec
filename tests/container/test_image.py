"""The container image, built and run for real with podman: a base image made locally
with debootstrap (no image registry is reachable here), the Containerfile built on it
with the dependency wheels from the host, `relaygate init` then `serve` on a volume, a
chat completion, and SIGTERM while a stream is in flight: the stream finishes and is
billed, `relaygate check` is clean. Skipped without podman, runc and debootstrap; under
CI=true an engine that is there but fails is a failure."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.request
from pathlib import Path

import pytest

from gateway_core.testing import free_port, wait_until_up

BASE = "localhost/relaygate-test-base:bookworm"


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        message = f"{' '.join(command[:6])} … failed ({done.returncode}): {done.stderr[-3000:]}"
        (pytest.fail if os.environ.get("CI") == "true" else pytest.skip)(message)
    return done


def test_the_image_serves_and_drains_a_stream_on_sigterm(podman: list[str], image: str, tmp_path: Path) -> None:
    volume = f"relaygate-test-{os.getpid()}"
    port = free_port()
    env = ["-e", "RELAYGATE_HOST=127.0.0.1", "-e", f"RELAYGATE_PORT={port}"]
    tool = [*podman, "run", "--rm", "--network=host", "-v", f"{volume}:/var/lib/relaygate", *env, image]
    name = f"relaygate-test-{port}"
    try:
        config = json.loads(_run([*podman, "image", "inspect", image]).stdout)[0]["Config"]
        assert config["User"] == "relaygate" and config["Entrypoint"] == ["relaygate"] and config["StopSignal"] == "SIGTERM"
        assert "/var/lib/relaygate" in config["Volumes"]
        key = json.loads(_run([*tool, "init", "--json"]).stdout)["key"]
        _run([*podman, "run", "-d", "--name", name, "--network=host", "-v", f"{volume}:/var/lib/relaygate", *env, image])
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url, timeout=60)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        plain = {"model": "demo-chat", "messages": [{"role": "user", "content": "Hello"}]}
        with urllib.request.urlopen(urllib.request.Request(url + "/v1/chat/completions", json.dumps(plain).encode(), headers), timeout=10) as response:
            assert json.loads(response.read())["choices"][0]["message"]["content"]

        streamed: list[bytes] = []
        first_chunk = threading.Event()

        def stream() -> None:
            body = json.dumps({**plain, "stream": True, "messages": [{"role": "user", "content": "A long answer please, word by word"}]}).encode()
            with urllib.request.urlopen(urllib.request.Request(url + "/v1/chat/completions", body, headers), timeout=60) as response:
                for line in response:
                    streamed.append(line)
                    first_chunk.set()

        reader = threading.Thread(target=stream)
        reader.start()
        assert first_chunk.wait(20)
        _run([*podman, "stop", "-t", "60", name])  # SIGTERM, the image's STOPSIGNAL
        reader.join(30)
        assert b"data: [DONE]\n" in streamed, b"".join(streamed)[-500:]
        exit_code = json.loads(_run([*podman, "inspect", name]).stdout)[0]["State"]["ExitCode"]
        assert exit_code == 0

        rows = json.loads(_run([*tool, "logs", "--json"]).stdout)
        assert sorted((row["stream"], row["end_reason"], row["status"]) for row in rows) == [(False, "done", 200), (True, "done", 200)]
        assert _run([*tool, "check"]).stdout.count("OK:") == 1
    finally:
        subprocess.run([*podman, "rm", "-f", name], capture_output=True)
        subprocess.run([*podman, "volume", "rm", "-f", volume], capture_output=True)


def test_the_image_size_is_the_documented_one(podman: list[str], image: str) -> None:
    """The relaygate layers on top of the base (docs/deploy.md states them)."""
    sizes = {name: json.loads(_run([*podman, "image", "inspect", name]).stdout)[0]["Size"] for name in (image, BASE)}
    assert sizes[image] - sizes[BASE] < 250_000_000
