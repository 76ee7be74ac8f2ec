"""Several worker processes on one port: the supervisor.

``relaygate serve --workers N`` binds one listening socket per worker, in this
parent process, all on the same address with ``SO_REUSEPORT``, and starts N
workers (``python -m gateway_core.runtime.worker``), each inheriting its own socket and
serving the app with hypercorn (or uvicorn, ``--server``) on uvloop. The kernel spreads new connections
evenly over the sockets; one socket shared by every worker would leave that to
whichever worker wakes first, and with keep-alive connections one worker often
ended up with most of them (measured: 44 of 48). The parent binding them keeps an
address in use a start-up error (one line) and other users' programs out of the
port (``SO_REUSEPORT`` joins only sockets of the same user), and the parent keeps
every socket open for the server's lifetime: when a worker dies, connections
waiting in its socket's queue, and the new ones the kernel gives that socket
meanwhile, wait for its replacement (a second or two) rather than being reset.

- **Logs.** Each worker's stdout and stderr come through a pipe to this
  process, which writes whole lines to its stdout: records never interleave.
  In JSON mode a worker's records carry ``worker`` (1…N), the supervisor's
  ``worker: 0`` (naming the worker they concern in ``slot``), and a stray line
  that is not JSON (an interpreter's crash report) is wrapped into a ``worker
  output`` record.
- **Shutdown.** SIGTERM or SIGINT: the supervisor closes its copies of the sockets
  and sends SIGTERM to every worker, whose ``/readyz`` says 503 at once; after
  ``shutdown_drain_seconds`` it stops accepting, lets its requests and streams
  finish within ``grace`` seconds, records them and exits (a second signal: the
  workers skip the rest of the drain period). Once every worker has closed its
  socket new connections are refused. A worker still running ``STOP_MARGIN``
  (10) seconds after the drain and grace periods is killed.
- **Crashes.** A worker that exits while the server is not stopping is started
  again after a pause that doubles with each quick failure (``RestartPolicy``);
  when workers exit more than ``crash_limit`` times within ``window`` seconds
  the server stops the others (draining them) and exits with status 3.

Exit statuses of ``serve``: 0 stopped by a signal, every worker drained; 1 not
started (configuration, database, Redis, limits without Redis, address in
use: one line on stderr), or a worker ended its shutdown with an error; 2 a bad
argument; 3 workers kept crashing; 4 a worker overran its shutdown and was
killed.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs
import orjson
import structlog

from ..config import Config
from .cpu_pinning import cpu_for_worker

if TYPE_CHECKING:
    from ..hookspecs import ServeSetup

log = structlog.get_logger("relaygate.supervisor")

EXIT_OK, EXIT_FAILED, EXIT_CRASH_LOOP, EXIT_KILLED = 0, 1, 3, 4
STOP_MARGIN = 10.0  # seconds past the grace period before a worker still running is killed
# how a worker ends when told to stop: drained, or killed by the signal before it could handle it (still starting)
CLEAN_STOPS = (0, -signal.SIGTERM, -signal.SIGINT)
MAX_LINE = 1024 * 1024  # a longer output line is passed on in pieces
# once a worker's pipe has output, the read waits this long: under load one read then
# takes many lines at once (about one wake-up, read and write per line before)
RELAY_PAUSE_S = 0.005


def prepare_server(setups: Sequence[ServeSetup], env: dict[str, str], workers: int) -> None:
    """Per-server set-up, run once before the app is built or any worker starts:
    each plugin's ``register_serve_setup`` (the metrics' shared folder).

    ``env`` is the environment every worker process gets (with one worker, it
    becomes this process's): the place for what all workers must share and find
    ready when they start."""
    for setup in setups:
        setup(workers, env)


def worker_gone(pid: int) -> None:
    """Per-worker clean-up after a worker process ended (crashed, killed or
    stopped), before any replacement starts. Nothing to do yet: the metrics
    (``relaygate-metrics``) forget a dead worker's gauges when scraped."""


def worker_environment(config: Config) -> dict[str, str]:
    """The environment of a worker: this one, with the configuration's database,
    plugins file and Redis named (a worker reads its configuration from there)."""
    env = dict(os.environ)
    env["RELAYGATE_DB"] = config.db_path
    if config.source:
        env["RELAYGATE_PLUGINS"] = os.path.abspath(config.source)
    if config.redis:
        env["RELAYGATE_REDIS"] = config.redis
    return env


@attrs.frozen
class RestartPolicy:
    first_delay: float = 0.5  # seconds before restarting a worker that failed once
    max_delay: float = 30.0
    stable_after: float = 30.0  # a worker that ran this long starts its pauses afresh when it fails
    crash_limit: int = 5  # more exits than this within `window` seconds: the server gives up
    window: float = 60.0

    def delay(self, failures: int) -> float:
        """The pause before the next start after ``failures`` quick failures in a row."""
        return min(self.max_delay, self.first_delay * 2 ** max(0, failures - 1))


Command = Callable[[int, int], list[str]]  # (worker number, listening fd) -> argv


class Supervisor:
    """Runs ``workers`` processes until a signal, each on a listening socket of
    its own made by ``bind`` (all bound here, at once: an error binding is raised
    before anything starts; a replacement gets its predecessor's socket);
    :meth:`run` returns the exit status.
    ``command`` makes a worker's argv (default: :func:`worker_command`)."""

    def __init__(
        self,
        bind: Callable[[], socket.socket],
        *,
        workers: int,
        grace: float,
        env: dict[str, str],
        drain: float = 0.0,
        json: bool,
        policy: RestartPolicy = RestartPolicy(),
        command: Command | None = None,
        stop_margin: float = STOP_MARGIN,
        server: str = "hypercorn",
        cpus: list[int] | None = None,
    ) -> None:
        self.sockets: dict[int, socket.socket] = {}
        try:
            for n in range(1, workers + 1):
                self.sockets[n] = bind()
        except OSError:
            self._close_sockets()
            raise
        self.workers = workers
        self.grace = grace
        self.drain = drain  # seconds a worker keeps accepting after the signal (/readyz says 503)
        self.env = env
        self.json = json
        self.policy = policy
        self.stop_margin = stop_margin
        pin = (lambda n: cpu_for_worker(n, cpus)) if cpus else (lambda n: None)  # a replacement gets its slot's CPU
        self.command = command or (lambda n, fd: worker_command(n, fd, grace, json, server, pin(n)))
        self.crashes: collections.deque[float] = collections.deque()
        self.started = 0  # worker processes started, replacements included
        self._procs: dict[int, asyncio.subprocess.Process] = {}
        self._stopping: asyncio.Event | None = None
        self._gave_up = False
        self._failed_stops = 0
        self._out = sys.stdout.buffer

    def run(self) -> int:
        import uvloop

        return uvloop.run(self._main())

    async def _main(self) -> int:
        loop = asyncio.get_running_loop()
        self._stopping = stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)
        slots = [asyncio.ensure_future(self._keep(n)) for n in range(1, self.workers + 1)]
        await stopping.wait()
        self._close_sockets()  # the workers' copies close as they stop: then connections are refused
        for proc in list(self._procs.values()):
            _signal(proc, signal.SIGTERM)
        _, overran = await asyncio.wait(slots, timeout=self.drain + self.grace + self.stop_margin)
        for n, proc in list(self._procs.items()):
            log.error("worker overran its shutdown: killed", slot=n, pid=proc.pid, grace_s=self.grace)
            _signal(proc, signal.SIGKILL)
        if overran:
            await asyncio.wait(overran)
        status = EXIT_CRASH_LOOP if self._gave_up else EXIT_KILLED if overran else EXIT_FAILED if self._failed_stops else EXIT_OK
        log.info("stopped", status=status)
        return status

    def _close_sockets(self) -> None:
        for sock in self.sockets.values():
            sock.close()
        self.sockets.clear()

    def _on_signal(self, sig: signal.Signals) -> None:
        assert self._stopping is not None
        if self._stopping.is_set():  # a second signal: the workers stop draining at once
            log.info("stopping at once", signal=sig.name)
            for proc in list(self._procs.values()):
                _signal(proc, signal.SIGTERM)
            return
        log.info("stopping: draining the workers", signal=sig.name, grace_s=self.grace)
        self._stopping.set()

    async def _keep(self, n: int) -> None:
        """Keep worker ``n`` running until the server stops."""
        assert self._stopping is not None
        loop = asyncio.get_running_loop()
        failures = 0
        while not self._stopping.is_set():
            started = loop.time()
            status, pid = await self._run_once(n)
            if self._stopping.is_set():
                if status not in CLEAN_STOPS:
                    self._failed_stops += 1
                return
            ran = loop.time() - started
            log.error("worker exited", slot=n, pid=pid, ran_s=round(ran, 3), **exit_fields(status))
            if self._crash_loop(loop.time()):
                log.error(
                    "workers keep crashing: stopping the server",
                    exits=len(self.crashes), window_s=self.policy.window,
                )  # fmt: skip
                self._gave_up = True
                self._stopping.set()
                return
            failures = failures + 1 if ran < self.policy.stable_after else 1
            delay = self.policy.delay(failures)
            log.warning("worker restarting", slot=n, in_s=delay)
            try:
                await asyncio.wait_for(self._stopping.wait(), delay)
            except asyncio.TimeoutError:
                pass

    async def _run_once(self, n: int) -> tuple[int, int | None]:
        """Start worker ``n``, pass its output on, wait for its end: its exit status and pid."""
        assert self._stopping is not None
        fd = self.sockets[n].fileno()
        output, output_end = os.pipe()  # the worker's stdout and stderr
        os.set_blocking(output, False)
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.command(n, fd),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output_end,
                stderr=asyncio.subprocess.STDOUT,
                env=self.env,
                pass_fds=(fd,),
            )
        except OSError as exc:
            os.close(output)
            log.error("worker could not start", slot=n, error=str(exc))
            return 127, None
        finally:
            os.close(output_end)  # the worker's copy alone: its exit ends the relay
        self.started += 1
        self._procs[n] = proc
        log.info("worker started", slot=n, pid=proc.pid)
        if self._stopping.is_set():  # a stop came while it was being started
            _signal(proc, signal.SIGTERM)
        relay = asyncio.ensure_future(self._relay(output, n))
        status = await proc.wait()
        await relay
        del self._procs[n]
        worker_gone(proc.pid)
        if self._stopping.is_set():
            log.info("worker stopped", slot=n, pid=proc.pid, **exit_fields(status))
        return status, proc.pid

    def _crash_loop(self, now: float) -> bool:
        self.crashes.append(now)
        while self.crashes and self.crashes[0] < now - self.policy.window:
            self.crashes.popleft()
        return len(self.crashes) > self.policy.crash_limit

    async def _relay(self, fd: int, n: int) -> None:
        """Pass a worker's output (the pipe ``fd``) on, whole lines only, until it ends.

        Once the pipe has something, the read waits :data:`RELAY_PAUSE_S` first: under
        load one wake-up, read and write then carries many lines (one each per line
        cost about 0.03 ms of CPU per request); an idle worker costs nothing."""
        loop = asyncio.get_running_loop()
        pending = b""
        try:
            ended = False
            while not ended:
                await _readable(loop, fd)
                await asyncio.sleep(RELAY_PAUSE_S)
                chunk, ended = _read_available(fd)
                pending += chunk
                end = pending.rfind(b"\n")
                if end < 0:
                    if len(pending) >= MAX_LINE:
                        self._emit(pending + b"\n", n)
                        pending = b""
                    continue
                self._emit(pending[: end + 1], n)
                pending = pending[end + 1 :]
        finally:
            os.close(fd)
        if pending:
            self._emit(pending + b"\n", n)

    def _emit(self, lines: bytes, n: int) -> None:
        """Write complete ``lines``; in JSON mode, one that is not JSON becomes a record."""
        if self.json and _has_stray_line(lines):
            lines = b"".join(_as_record(line, n) for line in lines.splitlines(keepends=True))
        try:
            self._out.write(lines)
            self._out.flush()
        except (BrokenPipeError, ValueError):  # nobody reads our output any more
            pass


async def _readable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    """Wait until ``fd`` has something to read (or its end)."""
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


def _read_available(fd: int) -> tuple[bytes, bool]:
    """What the pipe ``fd`` holds now (up to :data:`MAX_LINE`), and whether it ended."""
    chunks: list[bytes] = []
    size = 0
    while size < MAX_LINE:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return b"".join(chunks), False
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _has_stray_line(lines: bytes) -> bool:
    """Whether any of ``lines`` (each ending with a newline) does not start a JSON object."""
    return not lines.startswith(b"{") or lines.count(b"\n") != lines.count(b"\n{") + 1


def _as_record(line: bytes, n: int) -> bytes:
    if line.startswith(b"{") or not line.strip():
        return line if line.strip() else b""
    text = line.rstrip(b"\r\n").decode("utf-8", "replace")
    now = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    record = {"event": "worker output", "line": text, "worker": n, "level": "warning", "timestamp": now}
    return orjson.dumps(record) + b"\n"


def worker_command(n: int, fd: int, grace: float, json: bool, server: str = "hypercorn", cpu: int | None = None) -> list[str]:
    """The command line of worker ``n`` serving on the inherited socket ``fd`` with
    ``server`` (pinned to ``cpu``, when given)."""
    return [
        sys.executable, "-m", "gateway_core.runtime.worker", "--worker", str(n), "--fd", str(fd),
        "--grace", repr(grace), "--log", "json" if json else "console", "--server", server,
        *(["--cpu", str(cpu)] if cpu is not None else []),
    ]  # fmt: skip


def exit_fields(status: int) -> dict[str, int | str]:
    """A process's end for a log record: ``{"status": 3}`` or ``{"signal": "SIGKILL"}``."""
    if status < 0:
        try:
            return {"signal": signal.Signals(-status).name}
        except ValueError:
            return {"signal": str(-status)}
    return {"status": status}


def _signal(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    if proc.returncode is None:
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
