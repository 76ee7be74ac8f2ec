"""Every hook works as documented, has its section in docs/hooks.md, and a test here."""

from __future__ import annotations

import asyncio
import inspect
from contextlib import asynccontextmanager
import re
from pathlib import Path

import aiohttp
import orjson
import pytest
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from gateway_core import (
    Call,
    ChannelType,
    ClientProtocol,
    Exchange,
    JsonReply,
    PermissionDeniedError,
    Policy,
    RenderedError,
    RouteSpec,
    Usage,
    hookimpl,
    hookspecs,
)
from gateway_core.commands.cli import main
from gateway_core.config import Config, ConfigError
from gateway_core.runtime.plugins import collect
from gateway_core.observers import Observer
from gateway_core.ratelimit.memory import InProcessRateLimiter
from gateway_core.shared.in_process import InProcessState
from gateway_core.shared_state import SharedStateKind
from gateway_core.sign_in import SessionUser
from gateway_core.store import Store
from gateway_core.store.kinds import SqliteKind
from gateway_core.testing import Seed

DOCS = Path(__file__).resolve().parents[1] / "docs" / "hooks.md"


def hook_names() -> list[str]:
    return [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("register_")]


def test_every_hook_has_a_docstring_a_doc_section_and_a_test():
    text = DOCS.read_text(encoding="utf-8")
    sections = set(re.findall(r"^## `(\w+)`", text, flags=re.M))
    tests = {name for name in globals() if name.startswith("test_hook_")}
    for name in hook_names():
        assert getattr(hookspecs, name).__doc__, f"{name} has no docstring"
        assert name in sections, f"docs/hooks.md lacks a section for {name}"
        assert f"test_hook_{name}" in tests, f"tests/test_hooks.py lacks test_hook_{name}"


# --- a tiny plugin using every hook ------------------------------------------


class EchoProtocol(ClientProtocol):
    name = "echo-protocol"

    def routes(self):
        return (RouteSpec("/echo", "chat"),)

    def read_key(self, headers, query):
        return headers.get("x-echo-key", "")

    def parse(self, route, body, headers, query, path_params):
        data = orjson.loads(body)
        return Call(protocol=self.name, endpoint="chat", wire="echo", model=data["model"], stream=False, body=data)

    def to_core(self, call):
        raise AssertionError("same wire: never converted")

    def render_response(self, call, response):
        raise AssertionError("same wire: never converted")

    def stream_writer(self, call, passthrough):
        raise NotImplementedError

    def render_models(self, call, models, headers, query):
        return orjson.dumps([m.id for m in models])

    def render_error(self, error, request_id):
        return RenderedError(status=error.status, body=orjson.dumps({"echo_error": error.message}))


class EchoChannel(ChannelType):
    name = "echo-channel"

    def wire(self, endpoint):
        return "echo" if endpoint == "chat" else None

    async def send(self, exchange: Exchange):
        body = orjson.dumps({"echoed": exchange.call.body["text"], "model": exchange.target.upstream_model})
        return JsonReply(body=body, response=None, usage=Usage(input_tokens=1, output_tokens=2))


class NoSecretsPolicy(Policy):
    name = "no_secrets"
    order = 450
    finished = 0

    async def admit(self, ctx, services):
        if "secret" in ctx.call.body.get("text", ""):
            raise PermissionDeniedError("no secrets here")

    async def finish(self, ctx, services):
        NoSecretsPolicy.finished += 1


class EchoPlugin:
    @hookimpl
    def register_client_protocols(self, register):
        register(EchoProtocol())

    @hookimpl
    def register_channel_types(self, register):
        register(EchoChannel())

    @hookimpl
    def register_policies(self, register, config):
        register(NoSecretsPolicy())

    @hookimpl
    def register_routes(self, register):
        register(Route("/echo-status", lambda request: PlainTextResponse("echo plugin here")))

    @hookimpl
    def register_session_readers(self, register):
        register(EchoSessions())

    @hookimpl
    def register_migrations(self, register):
        register("9000_echo_notes", lambda schema: schema.execute("CREATE TABLE echo_notes (id INTEGER PRIMARY KEY, note TEXT)"))

    @hookimpl
    def register_commands(self, register):
        def configure(parser):
            parser.add_argument("words", nargs="+")

        def run(args, cli):
            print("echo:", " ".join(args.words))
            return 0

        register("echo say", "print the words", configure, run)


class EchoSessions:
    """A session reader: a scope marked ``echo_user`` is a session of that user, CSRF token and all."""

    async def read_session(self, scope):
        return SessionUser(scope["echo_user"], "eve", False, True) if "echo_user" in scope else None


async def _echo_gateway(seed: Seed, start_gateway):
    config = seed.config
    with Seed(config, extra_plugins=[EchoPlugin()]) as seed_with_plugin:
        user = seed_with_plugin.user("eve")
        _, secret = seed_with_plugin.key(user)
        seed_with_plugin.channel("echo", type="echo-channel", base_url="local://echo", models=["echo-1"], model_map={"echo-1": "echo-upstream"})
    return start_gateway(config, extra_plugins=[EchoPlugin()]), secret


async def test_hook_register_client_protocols(seed, start_gateway):
    gateway, secret = await _echo_gateway(seed, start_gateway)
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/echo", json={"model": "echo-1", "text": "hi"}, headers={"x-echo-key": secret}) as response:
            assert response.status == 200
            assert await response.json() == {"echoed": "hi", "model": "echo-upstream"}
        async with http.post(gateway.url + "/echo", json={"model": "echo-1", "text": "hi"}, headers={"x-echo-key": "wrong"}) as response:
            assert response.status == 401
            assert "echo_error" in await response.json()


async def test_hook_register_channel_types(seed, start_gateway):
    gateway, secret = await _echo_gateway(seed, start_gateway)
    assert "echo-channel" in gateway.services.registry.channel_types
    row = seed.rows("SELECT channel_name, upstream_model, input_tokens, output_tokens FROM usage_logs")
    assert row == []
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/echo", json={"model": "echo-1", "text": "x"}, headers={"x-echo-key": secret}) as response:
            assert response.status == 200
    assert seed.rows("SELECT channel_name, upstream_model, input_tokens, output_tokens FROM usage_logs") == [
        {"channel_name": "echo", "upstream_model": "echo-upstream", "input_tokens": 1, "output_tokens": 2}
    ]


async def test_hook_register_policies(seed, start_gateway):
    gateway, secret = await _echo_gateway(seed, start_gateway)
    policies = [p.name for p in gateway.services.pipeline.policies]
    assert policies.index("no_secrets") > policies.index("authentication")
    before = NoSecretsPolicy.finished
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/echo", json={"model": "echo-1", "text": "a secret"}, headers={"x-echo-key": secret}) as response:
            assert response.status == 403
            assert await response.json() == {"echo_error": "no secrets here"}
        async with http.post(gateway.url + "/echo", json={"model": "echo-1", "text": "fine"}, headers={"x-echo-key": secret}) as response:
            assert response.status == 200
    assert NoSecretsPolicy.finished == before + 1  # finish runs for admitted requests only


async def test_hook_register_routes(seed, start_gateway):
    gateway, _ = await _echo_gateway(seed, start_gateway)
    async with aiohttp.ClientSession() as http:
        async with http.get(gateway.url + "/echo-status") as response:
            assert response.status == 200
            assert await response.text() == "echo plugin here"
            assert response.headers["x-request-id"].startswith("req_")


async def test_hook_register_session_readers(seed, start_gateway):
    """The app collects the readers; the management API (relaygate-api, its own
    tests: plugins/api/tests/test_api_sessions.py) asks them of a request."""
    gateway, _ = await _echo_gateway(seed, start_gateway)
    (reader,) = [r for r in gateway.services.registry.session_readers if isinstance(r, EchoSessions)]
    assert await reader.read_session({"type": "http", "headers": [], "echo_user": 7}) == SessionUser(7, "eve", False, True)
    assert await reader.read_session({"type": "http", "headers": []}) is None


def test_hook_register_migrations(tmp_path):
    config = Config(db_path=str(tmp_path / "m.db"))
    with Seed(config, extra_plugins=[EchoPlugin()]) as seed:
        assert seed.rows("SELECT name FROM schema_migrations WHERE name = '9000_echo_notes'") == [{"name": "9000_echo_notes"}]
        assert seed.rows("SELECT count(*) AS n FROM echo_notes") == [{"n": 0}]
    names = [name for name, _ in collect(config, [EchoPlugin()]).migrations]
    assert names == sorted(names) and names[0].startswith("0001")


def test_hook_register_commands(tmp_path, capsys):
    status = main(["echo", "say", "hello", "world", "--db", str(tmp_path / "c.db")], extra_plugins=[EchoPlugin()])
    assert status == 0
    assert capsys.readouterr().out.strip() == "echo: hello world"



class FolderStore(SqliteKind):
    """``folder://NAME``: a SQLite file named NAME in one folder (a store kind built on the embedded one)."""

    name = "folder"
    schemes = ("folder",)
    default = False

    def __init__(self, root: Path) -> None:
        self.root = root

    def _file(self, url: str) -> str:
        return str(self.root / f"{url.removeprefix('folder://')}.db") if url.startswith("folder://") else url

    def owns(self, store):
        return super().owns(store) and store.path.startswith(str(self.root))

    def location(self, url):
        return super().location(self._file(url))

    def missing(self, url):
        return super().missing(self._file(url))

    def open(self, url, migrations, **kwargs):
        return super().open(self._file(url), migrations, **kwargs)

    def admin(self, url, migrations, **kwargs):
        return super().admin(self._file(url), migrations, **kwargs)

    async def migrate(self, url, migrations, **kwargs):
        return await super().migrate(self._file(url), migrations, **kwargs)

    async def startup_problem(self, url, migrations, **kwargs):
        return await super().startup_problem(self._file(url), migrations, **kwargs)

    async def copy_end(self, url):
        return await super().copy_end(self._file(url))


class FolderStorePlugin:
    def __init__(self, root: Path) -> None:
        self.kind = FolderStore(root)

    @hookimpl
    def register_stores(self, register):
        register(self.kind)


@pytest.mark.usefixtures("bundled_adapters")  # its gateway serves an openai channel
async def test_hook_register_stores(tmp_path, capsys, start_gateway):
    plugin = FolderStorePlugin(tmp_path)
    registry = collect(Config(), [plugin])
    assert registry.store_kind("folder://team") is plugin.kind
    assert registry.store_kind(str(tmp_path / "plain.db")).name == "sqlite"  # the default still serves paths
    # the CLI finds the kind by the URL: init creates the file, another command refuses a missing one
    assert main(["user", "list", "--db", "folder://nobody"], extra_plugins=[plugin]) != 0
    assert f"no database at {tmp_path / 'nobody.db'}" in capsys.readouterr().err
    assert main(["init", "--db", "folder://team"], extra_plugins=[plugin]) == 0
    assert (tmp_path / "team.db").exists()
    capsys.readouterr()
    assert main(["user", "list", "--db", "folder://team", "--json"], extra_plugins=[plugin]) == 0
    assert [user["name"] for user in orjson.loads(capsys.readouterr().out)] == ["admin"]
    # a URL no installed kind serves is refused, naming the kinds there are
    assert main(["user", "list", "--db", "mysql://db.internal/relaygate"], extra_plugins=[plugin]) != 0
    assert "no loaded store serves mysql:// URLs (loaded stores: " in capsys.readouterr().err
    # two kinds for one scheme cannot both load
    with pytest.raises(ConfigError, match="registered twice"):
        collect(Config(), [plugin, FolderStorePlugin(tmp_path / "other")])
    # the gateway serves on it: the key init made answers /v1/models
    with Seed(Config(db_path="folder://team"), extra_plugins=[plugin]) as seed:
        assert isinstance(seed.store, Store) and seed.store.path == str(tmp_path / "team.db")
        user = seed.user("eve")
        _, secret = seed.key(user)
        seed.channel("second", type="demo", base_url="local://demo", models=["second-model"])
        seed.price("second-model", 0, 0, free=True)
    gateway = start_gateway(Config(db_path="folder://team"), extra_plugins=[plugin])
    async with aiohttp.ClientSession() as http:
        async with http.get(gateway.url + "/v1/models", headers={"authorization": f"Bearer {secret}"}) as response:
            assert response.status == 200, await response.text()
            assert "second-model" in [model["id"] for model in (await response.json())["data"]]


class SameProcessKind(SharedStateKind):
    """Gateways of one process sharing one rate limiter, and the invalidations told, recorded."""

    name = "same-process"

    def __init__(self) -> None:
        self.limiter = InProcessRateLimiter()
        self.published: list[dict] = []

    def wanted(self, config):
        return True

    def open(self, config, board, router):
        kind = self

        class State(InProcessState):
            @property
            def publish(self):
                return kind.published.append

        state = State()
        state.rate_limiter = self.limiter
        return state

    @asynccontextmanager
    async def publisher(self, config):
        yield self.published.append


class SameProcessPlugin:
    def __init__(self) -> None:
        self.kind = SameProcessKind()

    @hookimpl
    def register_shared_state(self, register):
        register(self.kind)


@pytest.mark.usefixtures("bundled_adapters")  # its gateway serves an openai channel
async def test_hook_register_shared_state(tmp_path, start_gateway):
    assert collect(Config()).shared_state_kind(Config()).name == "in-process"  # the default
    assert collect(Config()).shared_state_kind(Config(redis="redis://127.0.0.1:6379/0")).name == "redis"
    plugin = SameProcessPlugin()
    config = Config(db_path=str(tmp_path / "shared.db"))
    assert collect(config, [plugin]).shared_state_kind(config) is plugin.kind
    with Seed(config, extra_plugins=[plugin]) as seed:
        user = seed.user("eve")
        key_id, secret = seed.key(user, limits={"rpm": 1})
        seed.channel("demo", type="demo", base_url="local://demo", models=["demo-1"])
        seed.price("demo-1", 0, 0, free=True)
    # two gateways counting through the kind's one limiter: a key allowed one request a minute gets one in all
    first, second = (start_gateway(config, extra_plugins=[plugin]) for _ in range(2))
    body = {"model": "demo-1", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": f"Bearer {secret}"}
    async with aiohttp.ClientSession() as http:
        async with http.post(first.url + "/v1/chat/completions", json=body, headers=headers) as response:
            assert response.status == 200, await response.text()
        async with http.post(second.url + "/v1/chat/completions", json=body, headers=headers) as response:
            assert response.status == 429, await response.text()
    # a CLI command tells the running gateways through the kind's publisher
    assert main(["key", "disable", str(key_id), "--db", config.db_path], extra_plugins=[plugin]) == 0
    assert {"k": "key", "id": key_id}.items() <= plugin.kind.published[-1].items()


class RecordingObserver(Observer):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def started(self, ctx):
        self.events.append(("started", ctx.endpoint))

    def attempt_started(self, ctx, target, forward):
        self.events.append(("attempt", target.channel.name, forward))
        return {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"} if forward else None

    def stream_started(self, ctx):
        self.events.append(("stream_started",))

    def stream_ended(self, ctx):
        self.events.append(("stream_ended",))

    def finished(self, ctx, outcome, row):
        self.events.append(("finished", row.model, row.status, row.stream))

    def breaker_changed(self, channel, key, is_open):
        self.events.append(("breaker", channel, key, is_open))


class RecordingPlugin:
    def __init__(self) -> None:
        self.observer = RecordingObserver()
        self.made_for: list[object] = []

    @hookimpl
    def register_observers(self, register):
        def make(gateway):
            self.made_for.append(gateway.router)
            return self.observer

        register(make)
        register(lambda gateway: None)  # an observer that is off for this app


@pytest.mark.usefixtures("bundled_adapters")  # its gateway serves an openai channel
async def test_hook_register_observers(tmp_path, start_gateway):
    plugin = RecordingPlugin()
    config = Config(db_path=str(tmp_path / "observed.db"), breaker_failures=1)
    with Seed(config, extra_plugins=[plugin]) as seed:
        user = seed.user("eve", balance_usd=1)
        _, secret = seed.key(user)
        seed.channel("demo", type="demo", base_url="local://demo", models=["demo-1"], settings={"delay_ms": 0})
        seed.channel("gone", type="openai", base_url="http://127.0.0.1:9/v1", models=["gone-1"],
                     settings={"forward_traceparent": True})  # fmt: skip
        seed.price("demo-1", 0, 0, free=True)
        seed.price("gone-1", 0, 0, free=True)
    gateway = start_gateway(config, extra_plugins=[plugin])
    headers = {"authorization": f"Bearer {secret}"}
    chat = {"model": "demo-1", "messages": [{"role": "user", "content": "hi"}]}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/chat/completions", json=chat, headers=headers) as response:
            assert response.status == 200
        await until_events(plugin.observer, 2)
        assert plugin.observer.events == [("started", "chat"), ("attempt", "demo", False), ("finished", "demo-1", 200, False)]
        plugin.observer.events.clear()
        async with http.post(gateway.url + "/v1/chat/completions", json={**chat, "stream": True}, headers=headers) as response:
            assert response.status == 200
            await response.read()
        await until_events(plugin.observer, 4)
        assert [event[0] for event in plugin.observer.events] == ["started", "attempt", "stream_started", "stream_ended", "finished"]
        plugin.observer.events.clear()
        async with http.post(gateway.url + "/v1/chat/completions", json={**chat, "model": "gone-1"}, headers=headers) as response:
            assert response.status >= 500
        await until_events(plugin.observer, 3)
        events = plugin.observer.events
        assert events[0] == ("started", "chat") and ("attempt", "gone", True) in events
        assert ("breaker", "gone", "channel", True) in events or ("breaker", "gone", "0", True) in events
        assert events[-1][0] == "finished" and events[-1][2] >= 500
    assert len(plugin.made_for) == 1  # one observer per app, made with the gateway it observes


async def until_events(observer: RecordingObserver, count: int) -> None:
    """The settlement runs after the answer is sent: wait (briefly) until it told the observer."""
    for _ in range(200):
        if len(observer.events) > count and observer.events[-1][0] == "finished":
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the observer heard only {observer.events}")


class ServeSetupPlugin:
    """Names a file every worker of ``serve`` finds in its environment, made before they start."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.calls: list[int] = []

    def setup(self, workers: int, env: dict[str, str]) -> None:
        self.calls.append(workers)
        ready = self.folder / "ready"
        ready.write_text(str(workers))
        env["RELAYGATE_TEST_READY"] = str(ready)

    @hookimpl
    def register_serve_setup(self, register):
        register(self.setup)


class SettingsPlugin:
    @hookimpl
    def register_settings(self, register):
        register("acme", "endpoint", default="https://api.example")
        register("acme.oauth", "client_secret", variable="ACME_CLIENT_SECRET", secret=True)


def test_hook_register_settings():
    settings = collect(Config(), [SettingsPlugin()]).settings
    assert [(s.table, s.key, s.default, s.variable, s.secret) for s in settings if s.table.startswith("acme")] == [
        ("acme", "endpoint", "https://api.example", None, False),
        ("acme.oauth", "client_secret", None, "ACME_CLIENT_SECRET", True),
    ]

    class Twice:
        @hookimpl
        def register_settings(self, register):
            register("acme", "endpoint")

    with pytest.raises(ConfigError, match=r"setting 'endpoint' of \[plugins.acme\] registered twice"):
        collect(Config(), [SettingsPlugin(), Twice()]).settings


def test_hook_register_serve_setup(tmp_path):
    from gateway_core.runtime.supervisor import prepare_server

    plugin = ServeSetupPlugin(tmp_path)
    assert plugin.setup in collect(Config(), [plugin]).serve_setups
    env: dict[str, str] = {}
    # what `serve` runs before the app is built or a worker starts (here without the
    # installed plugins' own set-ups, which would change this process's environment)
    prepare_server([plugin.setup], env, 3)
    assert plugin.calls == [3]
    assert env["RELAYGATE_TEST_READY"] == str(tmp_path / "ready") and (tmp_path / "ready").read_text() == "3"
