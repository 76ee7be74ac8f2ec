"""Releases: the wheels of every distribution install into an empty virtual environment
that cannot see this tree (no index but the built wheels and the cached dependency
wheels), and what they install serves: ``relaygate init``, ``relaygate serve`` on a free
loopback port, one chat completion to ``demo-chat`` with the printed key, SIGTERM —
``relaygate[all]`` with its metrics, and the core alone (with the OpenAI protocol and the demo channel) without
any database driver, Redis client, metrics, tracing or uvicorn. Each cloud channel package
(azure, bedrock, vertex) installs on its own from its wheel into such a gateway that did not
have it: its channel type is listed, and a channel of it answers from its fake upstream."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

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


class FreshVenv:
    """An empty virtual environment in ``tmp_path`` that sees neither this tree nor any
    index: ``pip(*requirements)`` installs from the built wheels and the dependency wheels."""

    def __init__(self, tmp_path: Path, built_wheels: Path, dependency_wheels: Path) -> None:
        self.path, self.cwd = tmp_path / "venv", tmp_path
        self.wheels = ["--find-links", str(built_wheels), "--find-links", str(dependency_wheels)]
        subprocess.run([sys._base_executable, "-m", "venv", str(self.path)], check=True)  # type: ignore[attr-defined]
        self.bin = self.path / "bin"
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "RELAYGATE_", "VIRTUAL_ENV", "OTEL_", "PROMETHEUS_"))}
        self.env = env | {"RELAYGATE_HOME": str(tmp_path / "home"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    def pip(self, *requirements: str) -> None:
        subprocess.run([str(self.bin / "python"), "-m", "pip", "install", "--quiet", "--no-index", *self.wheels, *requirements],
                       check=True, env=self.env, cwd=self.cwd)  # fmt: skip

    def run(self, *argv: str) -> str:
        done = subprocess.run([str(self.bin / argv[0]), *argv[1:]], capture_output=True, text=True, env=self.env, cwd=self.cwd)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def channel_types(self) -> set[str]:
        return {line.split(":")[0] for line in self.run("relaygate", "channel", "types").splitlines() if not line.startswith(" ")}


def chat(url: str, key: str, model: str, text: str) -> dict[str, Any]:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": text}]}).encode()
    request = urllib.request.Request(url + "/v1/chat/completions", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def install(built_wheels: Path, dependency_wheels: Path, tmp_path: Path, requirements: list[str]) -> tuple[Path, dict[str, str], set[str]]:
    """``requirements`` installed into a new virtual environment from the wheels alone:
    its bin folder, the environment to run it in, and the distributions installed."""
    fresh = FreshVenv(tmp_path, built_wheels, dependency_wheels)
    fresh.pip(*requirements)
    installed = subprocess.run([str(fresh.bin / "python"), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True, env=fresh.env).stdout
    return fresh.bin, fresh.env, {item["name"].lower().replace("_", "-") for item in json.loads(installed)}


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
        answer = chat(url, key, "demo-chat", "Hello")
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
            "relaygate-vertex", "relaygate-console", "relaygate-api", "relaygate-postgres", "relaygate-redis", "relaygate-metrics", "relaygate-tracing"} <= names
    assert {"asyncpg", "redis", "prometheus-client", "opentelemetry-sdk", "uvicorn", "httptools"} <= names
    assert not names & {"pytest", "mypy", "playwright", "schemathesis", "hypothesis", "kubernetes"}, names
    types = subprocess.run([str(bin_ / "relaygate"), "channel", "types"], check=True, capture_output=True, text=True, env=env, cwd=tmp_path).stdout
    assert {"openai", "anthropic", "gemini", "demo", "azure", "bedrock", "vertex"} <= {line.split(":")[0] for line in types.splitlines() if not line.startswith(" ")}, types
    with serving(bin_, env, tmp_path) as url:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            assert "relaygate_requests_total" in response.read().decode()  # the metrics plugin, loaded because installed
        with urllib.request.urlopen(url + "/api/docs", timeout=10) as response:
            assert "swagger-ui" in response.read().decode()  # the management API, its page's files shipped in its wheel
        with urllib.request.urlopen(url + "/api/static/swagger-ui/swagger-ui-bundle.js", timeout=10) as response:
            assert response.status == 200


def test_the_core_alone_serves_without_drivers_metrics_tracing_or_uvicorn(built_wheels: Path, dependency_wheels: Path, tmp_path: Path) -> None:
    bin_, env, names = install(built_wheels, dependency_wheels, tmp_path, ["relaygate", "relaygate-openai", "relaygate-demo"])
    assert not {name for name in names if name in ("asyncpg", "redis", "prometheus-client", "uvicorn", "httptools") or name.startswith("opentelemetry")}, names
    with serving(bin_, env, tmp_path) as url:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/metrics", timeout=10)
        assert refused.value.code == 404  # no metrics plugin: no metrics route
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/api/openapi.json", timeout=10)
        assert refused.value.code == 404  # no management API plugin: no /api/
    uvicorn = subprocess.run([str(bin_ / "relaygate"), "serve", "--server", "uvicorn", "--db", str(tmp_path / "data" / "relaygate.db"), "--port", "0"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)  # fmt: skip
    assert uvicorn.returncode == 1 and uvicorn.stderr.count("\n") == 1, uvicorn.stderr
    assert "pip install 'relaygate[uvicorn]'" in uvicorn.stderr and "Traceback" not in uvicorn.stderr


def test_the_core_wheel_names_the_extras_an_operator_installs(built_wheels: Path) -> None:
    (core,) = built_wheels.glob(f"relaygate-{VERSION}-*.whl")
    with zipfile.ZipFile(core) as wheel:
        metadata = wheel.read(f"relaygate-{VERSION}.dist-info/METADATA").decode()
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")}
    assert {"all", "adapters", "azure", "vertex", "console", "api", "postgres", "redis", "metrics", "tracing", "uvicorn", "test"} <= extras


def test_each_cloud_package_installs_alone_into_a_gateway_without_it(
    built_wheels: Path, dependency_wheels: Path, tmp_path: Path, fakes_thread: Any, adapter_fakes: Callable[[str, str], ModuleType]
) -> None:
    from gateway_bedrock.fake_upstream import IAM_KEY, FakeBedrock

    fake_azure, fake_vertex = adapter_fakes("azure", "fake_azure"), adapter_fakes("vertex", "fake_vertex")
    oauth = fakes_thread.start(fake_vertex.FakeGoogleOAuth(account=fake_vertex.ServiceAccount.make()))
    azure, bedrock = fakes_thread.start(fake_azure.FakeAzure()), fakes_thread.start(FakeBedrock())
    vertex = fakes_thread.start(fake_vertex.FakeVertex(oauth=oauth))
    service_account = base64.b64encode(oauth.account.json(oauth.token_uri).encode()).decode()
    cloud = {  # package → its channel: type, base URL, key, model map, settings; the fake
        "relaygate-azure": ("azure", azure.url + "/openai/", fake_azure.AZURE_KEY, "chat-dep", [], azure),
        "relaygate-bedrock": ("bedrock", bedrock.url, IAM_KEY, "amazon.nova-pro-v1:0", ["region=us-east-1"], bedrock),
        "relaygate-vertex": ("vertex", vertex.url + "/v1/", service_account, "gemini-2.5-flash", [f"project={fake_vertex.PROJECT}"], vertex),
    }  # fmt: skip

    fresh = FreshVenv(tmp_path, built_wheels, dependency_wheels)
    fresh.pip("relaygate[adapters]")  # the core and the bundled adapters: no cloud channel type
    assert not fresh.channel_types() & {"azure", "bedrock", "vertex"}
    db = str(tmp_path / "data" / "relaygate.db")
    key = json.loads(fresh.run("relaygate", "init", "--db", db, "--json"))["key"]
    seconds: dict[str, float] = {}
    for package, (channel_type, base_url, upstream_key, upstream_model, settings, fake) in cloud.items():
        started = time.monotonic()
        fresh.pip(package)
        assert channel_type in fresh.channel_types()
        model = f"{channel_type}-model"
        fresh.run("relaygate", "channel", "add", channel_type, "--db", db, "--type", channel_type, "--base-url", base_url, "--api-key", upstream_key,
                  "--models", model, "--model-map", f"{model}={upstream_model}", *[f"--setting={s}" for s in settings])  # fmt: skip
        fresh.run("relaygate", "price", "set", model, "--db", db, "--free")  # the key init made has no balance
        port = free_port()
        server = subprocess.Popen([str(fresh.bin / "relaygate"), "serve", "--db", db, "--host", "127.0.0.1", "--port", str(port)],
                                  env=fresh.env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_up(url, timeout=30, process=server)
            answer = chat(url, key, model, f"hello {channel_type}")
            assert answer["choices"][0]["message"]["content"] == f"echo: hello {channel_type}"
            assert fake.requests and upstream_model in urllib.request.unquote(fake.requests[-1]["path"]) + json.dumps(fake.requests[-1]["body"])
        finally:
            server.send_signal(signal.SIGTERM)
            _, stderr = server.communicate(timeout=60)
        assert server.returncode == 0, stderr.decode()[-2000:]
        seconds[package] = round(time.monotonic() - started, 1)
    print("seconds to install, list, add a channel, serve and answer:", seconds)
