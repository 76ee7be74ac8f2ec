"""Releases: the wheels of every distribution install into an empty virtual environment
that cannot see this tree (no index but the built wheels and the cached dependency
wheels), and what they install serves: ``relaygate init``, ``relaygate serve`` on a free
loopback port, one chat completion to ``demo-chat`` with the printed key, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

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


def test_the_wheels_install_alone_and_serve(built_wheels: Path, dependency_wheels: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True)  # type: ignore[attr-defined]
    bin_ = venv / "bin"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "RELAYGATE_", "VIRTUAL_ENV"))}
    env |= {"RELAYGATE_HOME": str(tmp_path / "home"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([str(bin_ / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(built_wheels),
                    "--find-links", str(dependency_wheels), "relaygate[all]"], check=True, env=env, cwd=tmp_path)  # fmt: skip

    # what was installed is the wheels' copy, not this tree, and carries no test tool
    where = subprocess.run([str(bin_ / "python"), "-c", "import gateway_core, gateway_demo; print(gateway_core.__file__)"],
                           check=True, capture_output=True, text=True, env=env, cwd=tmp_path).stdout  # fmt: skip
    assert where.startswith(str(venv)), where
    installed = subprocess.run([str(bin_ / "python"), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True, env=env).stdout
    names = {item["name"].lower().replace("_", "-") for item in json.loads(installed)}
    assert {"relaygate", "relaygate-openai", "relaygate-anthropic", "relaygate-gemini", "relaygate-demo", "relaygate-azure", "relaygate-bedrock",
            "relaygate-vertex", "relaygate-console", "relaygate-postgres", "relaygate-redis", "relaygate-metrics", "relaygate-tracing"} <= names
    assert {"asyncpg", "redis", "prometheus-client", "opentelemetry-sdk", "uvicorn", "httptools"} <= names
    assert not names & {"pytest", "mypy", "playwright", "schemathesis", "hypothesis", "kubernetes"}, names
    types = subprocess.run([str(bin_ / "relaygate"), "channel", "types"], check=True, capture_output=True, text=True, env=env, cwd=tmp_path).stdout
    assert {"openai", "anthropic", "gemini", "demo", "azure", "vertex"} <= {line.split(":")[0] for line in types.splitlines() if not line.startswith(" ")}, types

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
    finally:
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=60)
    assert server.returncode == 0, stderr.decode()[-2000:]


def test_the_core_wheel_names_the_extras_an_operator_installs(built_wheels: Path) -> None:
    (core,) = built_wheels.glob(f"relaygate-{VERSION}-*.whl")
    with zipfile.ZipFile(core) as wheel:
        metadata = wheel.read(f"relaygate-{VERSION}.dist-info/METADATA").decode()
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")}
    assert {"all", "adapters", "azure", "vertex", "console", "postgres", "redis", "metrics", "tracing", "uvicorn", "test"} <= extras
