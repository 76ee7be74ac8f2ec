"""Fixtures every core test may use: PostgreSQL databases, the ``--db`` of either store,
and the kit's ``fake`` protocol and channel type in every gateway.

- ``relaygate_plugins``: the test kit's :mod:`~gateway_core.testing.fake_plugin`, so
  that a core test's ``seed`` and ``start_gateway`` know the channel type ``fake``
  and serve ``POST /fake/chat`` with no adapter installed.

- ``postgres_server``, ``pg_url``: the test kit's ``relaygate_postgres_server``
  and ``relaygate_postgres_url`` (:mod:`gateway_core.testing.pytest_plugin`) under
  shorter names: the server's URL, and a fresh database dropped after the test.
- ``db_url``: what ``--db`` takes, once per store: a SQLite file in ``tmp_path``,
  then a fresh PostgreSQL database.
- ``start_store``: starts the store at ``db_url``.
- ``redis_prefix``: the Redis plugin's ``relaygate_redis_prefix``: a key prefix
  of the test's own in the machine's Redis (``REDIS_URL``), its keys deleted
  after the test.
- ``flooding_upstream``: a :class:`FloodingUpstream` served on loopback (an
  OpenAI-like upstream that can send more than any bound).
- ``fakes_thread``: a :class:`FakesThread` for the session: fake upstreams served from an
  event loop of their own, for synchronous tests and fixtures wider than a test.
- ``bundled_adapters``: for a test that needs the bundled adapters without naming
  them in its code (the top conftest.py puts it in the ``plugins`` lane).
- ``adapter_fakes``: :func:`adapter_test_module`, which loads a module of an adapter's
  tests folder (the azure and vertex fakes) by path.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import orjson
import pytest
from aiohttp import web

from gateway_core.sql import Migration
from gateway_core.store.request_store import RequestStore
from gateway_core.testing import FakeUpstream, UpstreamServers, fake_plugin
from gateway_core.testing.stores import open_store

REDIS_URL = "redis://127.0.0.1:6379/0"

StartStore = Callable[[Sequence[Migration]], Awaitable[RequestStore]]


@pytest.fixture(scope="session")
def postgres_server(relaygate_postgres_server: str) -> str:
    return relaygate_postgres_server


@pytest.fixture
def pg_url(relaygate_postgres_url: str) -> str:
    """A database of its own for one test: its URL."""
    return relaygate_postgres_url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "relaygate.db")


@pytest.fixture
async def start_store(db_url: str) -> AsyncIterator[StartStore]:
    """``await start_store(migrations)``: the store at ``db_url`` (either kind, as
    :func:`~gateway_core.store.open_store` makes it), migrated and started;
    closed at the end of the test."""
    started: list[Any] = []

    async def start(migrations: Sequence[Migration]) -> RequestStore:
        store: Any = open_store(db_url, migrations)
        if db_url.startswith("postgresql"):
            await store.migrate()  # the PostgreSQL store migrates on request only
        await store.start()
        started.append(store)
        return store

    yield start
    for store in started:
        await store.close()


@pytest.fixture
def relaygate_plugins() -> Sequence[Any]:
    """The test kit's ``fake`` protocol and channel type, in every core test's gateway."""
    return (fake_plugin,)


@pytest.fixture
def bundled_adapters() -> None:
    """For a test that needs the bundled adapters (``relaygate[adapters]``) though its
    code names none of them (a ``relaygate`` command in a child process, a path of
    an adapter's protocol): requesting it puts the test in the ``plugins`` lane."""
    missing = [name for name in ("gateway_openai", "gateway_anthropic", "gateway_gemini", "gateway_demo") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"this test needs the bundled adapters; not installed: {', '.join(missing)}")


@pytest.fixture
def redis_prefix(relaygate_redis_prefix: str) -> str:
    return relaygate_redis_prefix


FLOOD_CHUNK = b"x" * 65536


@attrs.define
class FloodingUpstream(FakeUpstream):
    """An OpenAI-like upstream that sends more than anyone should read: ``mode`` is
    ``declared`` (a Content-Length far over any bound), ``endless`` (a JSON answer
    that never ends), ``frame`` (a stream whose second frame never ends),
    ``stream`` (a stream of valid frames that never ends) or ``ok`` (a normal
    small answer). ``sent`` says how much each flooding request
    wrote, ``cut`` how many were hung up on by the gateway."""

    mode: str = "ok"
    sent: list[int] = attrs.field(factory=list)
    cut: int = 0

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/chat/completions", self.chat)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        await self.admit(request, body)
        model = str(body.get("model"))
        if self.mode == "ok":
            return web.json_response(completion_of(model))
        if self.mode == "declared":
            response = web.StreamResponse(headers={"Content-Type": "application/json", "Content-Length": str(10**10)})
        else:
            content_type = "text/event-stream" if self.mode == "frame" else "application/json"
            response = web.StreamResponse(headers={"Content-Type": content_type})
        await response.prepare(request)
        sent = 0
        try:
            if self.mode == "stream":
                delta = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": model,
                         "choices": [{"index": 0, "delta": {"content": "y" * 60000}, "finish_reason": None}]}  # fmt: skip
                frame = b"data: " + orjson.dumps(delta) + b"\n\n"
                while sent < 2 * 10**9:
                    await response.write(frame)
                    sent += len(frame)
            if self.mode == "frame":
                first = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": model,
                         "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hel"}, "finish_reason": None}]}  # fmt: skip
                await response.write(b"data: " + orjson.dumps(first) + b"\n\n" + b'data: {"choices": "')
            else:
                await response.write(b'{"id": "c1", "choices": [], "padding": "')
            while sent < 2 * 10**9:  # until the gateway hangs up
                await response.write(FLOOD_CHUNK)
                sent += len(FLOOD_CHUNK)
        except (ConnectionError, asyncio.CancelledError):
            self.cut += 1
            raise
        finally:
            self.sent.append(sent)
        return response


def completion_of(model: str) -> dict[str, Any]:
    return {
        "id": "c2", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


@pytest.fixture
async def flooding_upstream(fake_upstream, bundled_adapters) -> FloodingUpstream:
    upstream: FloodingUpstream = await fake_upstream(FloodingUpstream(api_key=None))
    return upstream


@pytest.fixture
def demo_key(seed, bundled_adapters) -> str:
    """The secret of alice's key, with a demo channel answering ``demo-chat`` slowly (100 ms per word)."""
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("demo", type="demo", base_url="local://demo", models=["demo-chat"], settings={"delay_ms": 100})
    return secret


# ---- Fakes for synchronous tests, and the fakes kept in the adapters' tests folders ----


class FakesThread:
    """Fake upstreams served on loopback from an event loop in a thread of its own, so
    that synchronous tests (and fixtures wider than one test) can use them."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fake-upstreams", daemon=True)
        self.thread.start()
        self.servers = UpstreamServers()

    def start(self, fake: Any) -> Any:
        """Serve ``fake`` (its ``url`` set) until the session ends."""
        return asyncio.run_coroutine_threadsafe(self.servers.start(fake), self.loop).result(timeout=30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.servers.close(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture(scope="session")
def fakes_thread() -> Iterator[FakesThread]:
    fakes = FakesThread()
    yield fakes
    fakes.close()


def adapter_test_module(adapter: str, name: str) -> ModuleType:
    """A module of ``adapters/<adapter>/tests`` (its fake), by path: those folders are not packages."""
    qualified = f"relaygate_tests_{adapter}_{name}"
    if qualified not in sys.modules:
        spec = importlib.util.spec_from_file_location(qualified, ROOT / "adapters" / adapter / "tests" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    return sys.modules[qualified]


@pytest.fixture(scope="session")
def adapter_fakes() -> Callable[[str, str], ModuleType]:
    return adapter_test_module


# ---- Releases: the wheels every distribution builds, and their dependencies' wheels ----

ROOT = Path(__file__).resolve().parent.parent


def distributions() -> list[Path]:
    """The folders of the repository's distributions, from the Makefile's one list."""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith("DISTRIBUTIONS :="):
            return [ROOT / name for name in line.split(":=", 1)[1].split()]
    raise AssertionError("the Makefile names no DISTRIBUTIONS")


def wheel_cache() -> Path:
    """Dependency wheels kept between runs, in the user's cache (never the repository)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "relaygate" / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def distribution_folders() -> list[Path]:
    return distributions()


@pytest.fixture(scope="session")
def built_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of every distribution, built from this tree (as `make dist` does, but
    without an isolated build environment, so in seconds)."""
    out, sources = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("sources")
    for number, folder in enumerate(distributions()):
        # a clean copy of the distribution's own files: no build/ or egg-info left by an
        # earlier build (a deleted module would ship), no nested distribution, no tests
        def ignored(where: str, names: list[str], top: Path = folder) -> set[str]:
            return {name for name in names if name in _NOT_SHIPPED or name.endswith(".egg-info")
                    or (Path(where) / name / "pyproject.toml").exists() and Path(where) / name != top}  # fmt: skip

        copy = shutil.copytree(folder, sources / str(number), ignore=ignored)
        subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(copy)],
                       check=True, capture_output=True)  # fmt: skip
    return out


_NOT_SHIPPED = {".git", ".venv", "build", "dist", "data", "tests", "__pycache__", "node_modules", "test-artifacts"}


@pytest.fixture(scope="session")
def dependency_wheels(built_wheels: Path) -> Path:
    """Wheels of everything `relaygate[all]` needs (and setuptools, to build in an image),
    pinned by constraints.txt, kept in the user's cache: filled from the package index on
    the first run, offline after that."""
    cache = wheel_cache()
    probe = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--no-index",
             "--find-links", str(built_wheels), "--find-links", str(cache), "-c", str(ROOT / "constraints.txt"),
             "relaygate[all]", "setuptools", *_OLDER_PYTHONS_NEED]  # fmt: skip
    if subprocess.run(probe, capture_output=True).returncode != 0:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--find-links", str(built_wheels),
                        "-c", str(ROOT / "constraints.txt"), "--wheel-dir", str(cache), "relaygate[all]", "setuptools", *_OLDER_PYTHONS_NEED],
                       check=True, capture_output=True)  # fmt: skip
        for own in cache.glob("relaygate*"):
            own.unlink()
    return cache

# what the dependencies need on Debian bookworm's Python 3.11.2 (the container tests' base
# image) and not on this one: redis asks for async-timeout before 3.11.3
_OLDER_PYTHONS_NEED = ["async-timeout>=4.0.3"]
