"""Fixtures of the Redis shared state's tests.

- ``redis_prefix``: the plugin's ``relaygate_redis_prefix``: a key prefix of the
  test's own in the machine's Redis (``REDIS_URL``), its keys deleted after the test.
- ``private_redis``: a ``redis-server`` of the test's own on a free port, to stop
  and start (never the shared one); skipped when redis-server is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from gateway_core.testing import free_port

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def redis_prefix(relaygate_redis_prefix: str) -> str:
    return relaygate_redis_prefix


@attrs.define
class PrivateRedis:
    """A redis-server of the test's own, stopped and started at will."""

    directory: Path
    port: int = attrs.field(factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--dir", str(self.directory)]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True).stdout.strip() != "PONG":
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()
