"""The test kit for the gateway and its plugins.

- :class:`GatewayThread` serves a real gateway app over loopback HTTP from a
  background thread (with its own event loop), so tests call it with real
  clients, sync or async.
- :class:`GatewayProcess` runs ``relaygate serve`` as a child process (for tests
  that kill it or run several workers).
- :class:`Seed` puts users, keys, channels, prices and money into a store
  (SQLite or PostgreSQL) through the admin port.
- :class:`FakeUpstream` is the base of fake upstreams that speak a provider's real
  wire format over loopback HTTP, with fault injection (:class:`Fault`);
  :class:`UpstreamServers` serves them (the ``fake_upstream`` fixture).
- :mod:`.fake_plugin` registers the kit's ``fake`` client protocol and channel
  type (a small wire of no provider, :mod:`.fake_wire`): with a :class:`FakeChat`
  upstream and a :class:`FakeClient`, a test drives the whole request path with no
  adapter installed.
- :class:`Examples` reads recorded wire examples from a ``tests/examples`` folder.
- :func:`upstream_models` lists a fake upstream's models through a channel type
  (``ChannelType.list_models``), as the fronts do.
- :func:`paths_of` and :func:`replaced` put another value at each place of a JSON
  value (property tests: any value in any field).
- :func:`make_key_record` and :func:`make_context` build what a policy's
  ``admit`` and ``finish`` receive, for unit tests of policies.

The pytest fixtures built on them are in :mod:`gateway_core.testing.pytest_plugin`. The
core's own tests use this same kit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from ..client_protocol import Call, ClientProtocol, Headers, Query, RenderedError, RouteSpec, StreamWriter
from ..config import Config
from ..request.context import RequestContext, new_request_id
from ..errors import GatewayError
from ..model import CoreRequest, CoreResponse, ModelInfo
from ..records import KeyRecord, UsageRow
from .examples import Examples
from . import fake_plugin
from .fake_chat import FakeChat
from .fake_client import FakeAnswer, FakeClient
from .fake_upstream import FakeUpstream, Fault, UpstreamServers
from .json_paths import paths_of, replaced
from .listing import upstream_models
from .seed import Seed

if TYPE_CHECKING:
    from ..runtime.services import Services

T = TypeVar("T")

__all__ = [
    "Examples",
    "FakeAnswer",
    "FakeChat",
    "FakeClient",
    "FakeUpstream",
    "Fault",
    "GatewayProcess",
    "GatewayThread",
    "Seed",
    "UpstreamServers",
    "fake_plugin",
    "free_port",
    "make_context",
    "make_key_record",
    "paths_of",
    "replaced",
    "upstream_models",
    "wait_until_up",
]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until_up(url: str, timeout: float = 15.0, process: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until ``url`` answers ``GET /healthz`` with 200, asking again after 5 ms,
    then after each pause doubled up to 50 ms: a gateway in a thread is up within a
    few milliseconds, one in a child process within a second or so."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the gateway exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
    raise TimeoutError(f"the gateway at {url} did not come up within {timeout} s")


class GatewayThread:
    """A gateway app served by hypercorn on 127.0.0.1 from a background thread."""

    def __init__(self, config: Config, *, extra_plugins: Iterable[Any] = (), **services: Any) -> None:
        """``services`` go to :func:`create_app` (``store=``, ``rate_limiter=``)."""
        from ..runtime.app import create_app

        self.config = config
        self.app = create_app(config, extra_plugins=extra_plugins, **services)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def services(self) -> Services:
        return self.app.services

    def start(self) -> GatewayThread:
        self._thread = threading.Thread(target=self._run, name="relaygate-gateway", daemon=True)
        self._thread.start()
        wait_until_up(self.url)
        return self

    def _run(self) -> None:
        import uvloop
        from hypercorn.asyncio import serve
        from hypercorn.config import Config as HypercornConfig

        from ..runtime.http_errors import install as install_error_bodies

        install_error_bodies()  # as relaygate serve does
        hconfig = HypercornConfig()
        hconfig.bind = [f"fd://{self._socket.detach()}"]  # hypercorn owns it from here
        hconfig.graceful_timeout = 5
        hconfig.accesslog = None
        loop = uvloop.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._stop = asyncio.Event()
        try:
            loop.run_until_complete(serve(self.app, hconfig, shutdown_trigger=self._stop.wait))
        except BaseException as exc:  # reported by stop()
            self._error = exc
        finally:
            loop.close()

    async def on_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the gateway's own event loop (as its console
        would, with its services) and await its result from any loop."""
        assert self._loop is not None, "the gateway is not started"
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self._loop))

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._error is not None:
            raise self._error

    def __enter__(self) -> GatewayThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class GatewayProcess:
    """``relaygate serve`` in a child process, on a free loopback port; ``args``
    are more options of ``serve`` (``["--redis", url]``). Its output (stdout and
    stderr) goes to a file, so a chatty gateway never blocks on a full pipe."""

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        plugins_file: str | None = None,
        workers: int = 1,
        env: dict[str, str] | None = None,
        args: Sequence[str] = (),
    ) -> None:
        command = [sys.executable, "-m", "gateway_core", "serve", "--db", str(db_path)]
        if plugins_file:
            command += ["--plugins", plugins_file]
        if workers > 1:
            command += ["--workers", str(workers)]
        self._command = [*command, *args]
        self._take_port()
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self._output: BinaryIO | None = None

    def _take_port(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [*self._command, "--port", str(self.port)]

    def start(self, timeout: float = 30.0) -> GatewayProcess:
        """Start it and wait until it answers ``/healthz``. A port another process took
        between choosing it and listening on it is chosen again (twice at most); a
        gateway that does not come up raises with the end of what it printed."""
        for attempt in range(3):
            self._output = tempfile.TemporaryFile(mode="a+b")  # appended to: reading never moves the writer
            self.process = subprocess.Popen(
                self.command, env=self.env, stdout=self._output, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                wait_until_up(self.url, timeout=timeout, process=self.process)
                return self
            except Exception as error:
                self.kill()
                printed = self.output()
                if attempt < 2 and "another process listens there" in printed:
                    self._take_port()
                    continue
                error.add_note("the gateway printed, at the end: " + printed[-2000:])
                raise
        raise AssertionError("unreachable")

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM to every process of the gateway; its exit status."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL to every process of the gateway."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def output(self) -> str:
        """Everything it printed so far."""
        if self._output is None:
            return ""
        self._output.seek(0)
        return self._output.read().decode("utf-8", "replace")

    def __enter__(self) -> GatewayProcess:
        if self.process is not None and self.process.poll() is None:
            return self  # started already (``start()`` before ``with``): a second one would be left running
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self.terminate()
            except subprocess.TimeoutExpired:
                self.kill()


def make_key_record(**fields: Any) -> KeyRecord:
    """A :class:`KeyRecord` for unit tests of policies: an enabled key of an
    enabled user in the group ``default``, with ``fields`` overriding."""
    values: dict[str, Any] = {
        "id": 1, "name": "test", "user_id": 1, "user_name": "alice", "user_enabled": True,
        "group": "default", "prefix": "sk-test…", "enabled": True, "deleted": False,
        "expires_at": None, "quota_micros": None, "used_micros": 0, "models": (),
        "allow_ips": (), "created_at": time.time(), "last_used_at": None,
    }  # fmt: skip
    values.update(fields)
    return KeyRecord(**values)


def make_context(protocol: Any = None, *, key: KeyRecord | None = None, client_ip: str | None = "127.0.0.1", body: bytes = b"", call: Any = None) -> RequestContext:
    """A :class:`RequestContext` as the relay builds it, for unit tests of policies.

    ``protocol`` defaults to a bare :class:`ClientProtocol` whose only behaviour
    is the default one (no rate-limit headers)."""
    ctx = RequestContext(
        request_id=new_request_id(), protocol=protocol or _BareProtocol(), client_ip=client_ip, headers={}
    )
    ctx.row = UsageRow(request_id=ctx.request_id, started_at=time.time(), protocol=ctx.protocol.name, endpoint="chat", client_ip=client_ip)
    ctx.key = key
    ctx.call = call
    ctx.body_size = len(body)
    return ctx


class _BareProtocol(ClientProtocol):
    """A protocol for contexts made by hand: policies may read its name, nothing more."""

    name = "bare"

    def routes(self) -> Sequence[RouteSpec]:
        return ()

    def read_key(self, headers: Headers, query: Query) -> str:
        raise NotImplementedError

    def parse(self, route: RouteSpec, body: bytes, headers: Headers, query: Query, path_params: Mapping[str, str]) -> Call:
        raise NotImplementedError

    def to_core(self, call: Call) -> CoreRequest:
        raise NotImplementedError

    def render_response(self, call: Call, response: CoreResponse) -> bytes:
        raise NotImplementedError

    def stream_writer(self, call: Call, passthrough: bool) -> StreamWriter:
        raise NotImplementedError

    def render_models(self, call: Call, models: Sequence[ModelInfo], headers: Headers, query: Query) -> bytes:
        raise NotImplementedError

    def render_error(self, error: GatewayError, request_id: str) -> RenderedError:
        raise NotImplementedError
