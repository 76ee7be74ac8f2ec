"""The bench's child processes: where each runs (CPU pinning), starting, waiting, stopping."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Placement:
    """Which CPU each party runs on (``None``: not pinned)."""

    def __init__(self, pin: bool) -> None:
        cores = sorted(os.sched_getaffinity(0))
        self.available = cores
        can = pin and len(cores) >= 2 and shutil.which("taskset") is not None
        self.server = cores[0] if can else None
        self.upstream = cores[1] if can else None
        self.loadgen = (cores[2] if len(cores) >= 3 else cores[1]) if can else None

    def command(self, core: int | None, argv: list[str]) -> list[str]:
        return argv if core is None else ["taskset", "-c", str(core), *argv]

    def describe(self) -> str:
        if self.server is None:
            return f"not pinned ({len(self.available)} CPU(s) available)"
        shared = " (shared with the upstream)" if self.loadgen == self.upstream else ""
        return (
            f"gateway, floor and peers (or hello server) on CPU {self.server}, fake upstream on CPU {self.upstream}, "
            f"load generator on CPU {self.loadgen}{shared}"
        )


class Child:
    """A child process in its own session; stopped with SIGTERM to its group."""

    def __init__(self, name: str, argv: list[str], log_path: Path, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(
            argv, stdout=self._log, stderr=subprocess.STDOUT, cwd=cwd, env=env, start_new_session=True
        )
        self.pid = self.process.pid  # taskset execs: same pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.alive():
            try:
                os.killpg(self.pid, signal.SIGTERM)
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
            except ProcessLookupError:
                pass
        self._log.close()
        return self.process.returncode

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def wait_http(url: str, child: Child, timeout: float = 30.0, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not child.alive():
            raise RuntimeError(f"{child.name} exited with status {child.process.returncode}:\n{child.tail()}")
        try:
            request = urllib.request.Request(url, data=body, method=method, headers=headers or {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{child.name} did not answer {url} within {timeout:g} s:\n{child.tail()}")

