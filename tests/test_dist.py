"""Releases: the wheels of every distribution install into an empty virtual environment
that cannot see this tree (no index but the built wheels and the cached dependency
wheels), and what they install serves: ``relaygate init``, ``relaygate serve`` on a free
loopback port, one chat completion to ``demo-chat`` with the printed key, SIGTERM —
``relaygate[all]`` with its metrics, and the core alone (with the OpenAI protocol and the demo channel) without
any database driver, Redis client, metrics, tracing or uvicorn."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway_core.testing import free_port, wait_until_up

ROOT = Path(__file__).resolve().parent.parent
VERSION = (ROOT / "VERSION").read_text().strip()


def test_every_distribution_takes_its_version_from_the_one_file(built_wheels: Path, distribution_folders: list[Path]) -> None:
    names = sorted(path.name for path in built_wheels.glob("*.whl"))
    assert len(names) == len(distribution_folders)
    assert all(f"-{VERSION}-py3-none-any.whl" in name for name in names), names
    for folder in distribution_folders:
        link = folder / "VERSION"
        assert link.resolve() == ROOT / "VERSION", f"{link} is not the top VERSION"


def install(built_wheels: Path, dependency_wheels: Path, tmp_path: Path, requirements: list[str]) -> tuple[Path, dict[str, str], set[str]]:
    """``requirements`` installed into a new virtual environment from the wheels alone:
    its bin folder, the environment to run it in, and the distributions installed."""
    venv = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True)  # type: ignore[attr-defined]
    bin_ = venv / "bin"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "RELAYGATE_", "VIRTUAL_ENV", "OTEL_", "PROMETHEUS_"))}
    env |= {"RELAYGATE_HOME": str(tmp_path / "home"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([str(bin_ / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(built_wheels),
                    "--find-links", str(dependency_wheels), *requirements], check=True, env=env, cwd=tmp_path)  # fmt: skip
    installed = subprocess.run([str(bin_ / "python"), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True, env=env).stdout
    return bin_, env, {item["name"].lower().replace("_", "-") for item in json.loads(installed)}


@contextlib.contextmanager
def serving(bin_: Path, env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """``relaygate init`` then ``relaygate serve`` on a free loopback port; one chat
    completion to ``demo-chat`` with the printed key answers; the gateway's URL, then
    SIGTERM, after which the server must exit 0."""
    port = free_port()
    db = tmp_path / "data" / "relaygate.db"
    init = subprocess.run([str(bin_ / "relaygate"), "init", "--db", str(db), "--json", "--host", "127.0.0.1", "--port", str(port)],
                          check=True, capture_output=True, text=True, env=env, cwd=tmp_path)  # fmt: skip
    key = json.loads(init.stdout)["key"]
    server = subprocess.Popen([str(bin_ / "relaygate"), "serve", "--db", str(db), "--host", "127.0.0.1", "--port", str(port)],
                              env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url, timeout=30, process=server)
        body = json.dumps({"model": "demo-chat", "messages": [{"role": "user", "content": "Hello"}]}).encode()
        request = urllib.request.Request(url + "/v1/chat/completions", data=body, method="POST",
                                         headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.loads(response.read())
        assert answer["object"] == "chat.completion"
        assert answer["choices"][0]["message"]["content"]
        assert answer["usage"]["total_tokens"] > 0
        yield url
    finally:
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=60)
    assert server.returncode == 0, stderr.decode()[-2000:]


def test_the_wheels_install_alone_and_serve(built_wheels: Path, dependency_wheels: Path, tmp_path: Path) -> None:
    bin_, env, names = install(built_wheels, dependency_wheels, tmp_path, ["relaygate[all]"])

    # what was installed is the wheels' copy, not this tree, and carries no test tool
    where = subprocess.run([str(bin_ / "python"), "-c", "import gateway_core, gateway_demo; print(gateway_core.__file__)"],
                           check=True, capture_output=True, text=True, env=env, cwd=tmp_path).stdout  # fmt: skip
    assert where.startswith(str(bin_.parent)), where
    assert {"relaygate", "relaygate-openai", "relaygate-anthropic", "relaygate-gemini", "relaygate-demo", "relaygate-azure", "relaygate-bedrock",
            "relaygate-vertex", "relaygate-console", "relaygate-postgres", "relaygate-redis", "relaygate-metrics", "relaygate-tracing"} <= names
    assert {"asyncpg", "redis", "prometheus-client", "opentelemetry-sdk", "uvicorn", "httptools"} <= names
    assert not names & {"pytest", "mypy", "playwright", "schemathesis", "hypothesis", "kubernetes"}, names
    types = subprocess.run([str(bin_ / "relaygate"), "channel", "types"], check=True, capture_output=True, text=True, env=env, cwd=tmp_path).stdout
    assert {"openai", "anthropic", "gemini", "demo", "azure", "vertex"} <= {line.split(":")[0] for line in types.splitlines() if not line.startswith(" ")}, types
    with serving(bin_, env, tmp_path) as url, urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        assert "relaygate_requests_total" in response.read().decode()  # the metrics plugin, loaded because installed


def test_the_core_alone_serves_without_drivers_metrics_tracing_or_uvicorn(built_wheels: Path, dependency_wheels: Path, tmp_path: Path) -> None:
    bin_, env, names = install(built_wheels, dependency_wheels, tmp_path, ["relaygate", "relaygate-openai", "relaygate-demo"])
    assert not {name for name in names if name in ("asyncpg", "redis", "prometheus-client", "uvicorn", "httptools") or name.startswith("opentelemetry")}, names
    with serving(bin_, env, tmp_path) as url:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/metrics", timeout=10)
        assert refused.value.code == 404  # no metrics plugin: no metrics route
    uvicorn = subprocess.run([str(bin_ / "relaygate"), "serve", "--server", "uvicorn", "--db", str(tmp_path / "data" / "relaygate.db"), "--port", "0"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)  # fmt: skip
    assert uvicorn.returncode == 1 and uvicorn.stderr.count("\n") == 1, uvicorn.stderr
    assert "pip install 'relaygate[uvicorn]'" in uvicorn.stderr and "Traceback" not in uvicorn.stderr


def test_the_core_wheel_names_the_extras_an_operator_installs(built_wheels: Path) -> None:
    (core,) = built_wheels.glob(f"relaygate-{VERSION}-*.whl")
    with zipfile.ZipFile(core) as wheel:
        metadata = wheel.read(f"relaygate-{VERSION}.dist-info/METADATA").decode()
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")}
    assert {"all", "adapters", "azure", "vertex", "console", "postgres", "redis", "metrics", "tracing", "uvicorn", "test"} <= extras
