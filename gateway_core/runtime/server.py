"""Serving the app with hypercorn (or ``--server uvicorn``) on uvloop, with a graceful shutdown.

hypercorn is the default; uvicorn (httptools) costs the server's part of a
request about a fifth of hypercorn's (h11) and keeps every behaviour below
(:mod:`gateway_core.runtime.server_uvicorn`; ``docs/operations.md``).

One worker (the default) serves in this process. With ``workers > 1`` this
process binds one ``SO_REUSEPORT`` listening socket per worker and becomes the
supervisor of that many worker processes, each serving the app on its socket
(:mod:`gateway_core.runtime.supervisor`, :mod:`gateway_core.runtime.worker`).

On SIGTERM or SIGINT ``GET /readyz`` turns 503 at once; after
``shutdown_drain_seconds`` (default 0) every server stops accepting connections,
lets in-flight requests and streams finish (up to ``[gateway] shutdown_grace_seconds``
or ``serve --grace``), then cuts the rest (a stream is charged what it delivered,
logged ``shutdown``, and ends with its protocol's error event), and the app's
lifespan closes upstream connections and flushes pending writes.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import os
import signal
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
import structlog
from hypercorn.config import Config as HypercornConfig

from ..config import Config
from .cpu_pinning import allowed_cpus, cpu_for_worker, pin_process
from .http_errors import install as install_error_bodies
from .logs import configure_logging, wants_json

if TYPE_CHECKING:
    from ..hookspecs import ServeSetup

log = structlog.get_logger("relaygate.server")

GRACEFUL_TIMEOUT = 30.0
BACKLOG = 1024
# young objects allocated before the collector looks at them (Python's default: 700)
YOUNG_COLLECTION_THRESHOLD = 10_000


def bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def listen_problem(host: str, port: int) -> str | None:
    """Why the gateway cannot listen on ``host:port``, in one line, or ``None``
    (a socket is bound and closed again, as the server will bind it)."""
    if not 0 <= port <= 65535:
        return f"--port must be from 0 to 65535, not {port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        return f"cannot listen on {host!r}: {reason} (--host takes an address or a name of this machine)"
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            hint = ": another process listens there (stop it, or choose another --port)" if exc.errno == errno.EADDRINUSE else ""
            return f"cannot listen on {bind_address(host, port)}: {exc.strerror or exc}{hint}"
    return None


def hypercorn_config(bind: str, grace: float = GRACEFUL_TIMEOUT) -> HypercornConfig:
    """Hypercorn's settings for one serving process; ``bind`` is ``HOST:PORT`` or
    ``fd://N`` (a listening socket inherited from the supervisor)."""
    install_error_bodies()  # hypercorn's own 400/431/501 answers in JSON, with a request id
    config = HypercornConfig()
    config.bind = [bind]
    config.graceful_timeout = grace
    config.backlog = BACKLOG
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # one handler: the root's
    config.keep_alive_timeout = 75
    return config


def serve(
    config: Config,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    workers: int = 1,
    grace: float | None = None,
    server: str | None = None,
    pin_workers: bool | None = None,
    warnings: Sequence[str] = (),
    setups: Sequence[ServeSetup] = (),
) -> int:
    """Run the gateway until a shutdown signal; returns the exit status
    (:mod:`gateway_core.runtime.supervisor` lists them for several workers).
    ``grace`` defaults to ``[gateway] shutdown_grace_seconds``, ``server`` to
    ``[gateway] server``, ``pin_workers`` (each worker on a CPU of its own,
    :mod:`gateway_core.runtime.cpu_pinning`) to ``[gateway] pin_workers``;
    ``warnings`` are logged once logging is set up; ``setups`` (the plugins'
    ``register_serve_setup``) run before the app is built or any worker starts."""
    from ..request.reservation import WORKERS_ENV
    from .supervisor import Supervisor, prepare_server, worker_environment

    grace = config.shutdown_grace_seconds if grace is None else grace
    server = server or config.server
    cpus = allowed_cpus() if (config.pin_workers if pin_workers is None else pin_workers) else None
    json = wants_json()
    configure_logging(json=json, worker=0 if workers > 1 else None)
    for warning in warnings:
        log.warning(warning)
    env = worker_environment(config)
    env[WORKERS_ENV] = str(workers)  # several workers share the store: none reserves beside the call (reservation.py)
    prepare_server(setups, env, workers)
    from .app import create_app

    address = f"http://{bind_address(host, port)}"
    if workers == 1:
        os.environ.update(env)
        if cpus is not None:  # before the app starts its store's threads (they inherit it)
            pin_process(cpu_for_worker(1, cpus))
        # loads plugins now: a bad configuration fails before binding (and they see the address, once)
        app = create_app(attrs.evolve(config, serve_host=host))
        log.info("serving", address=address, workers=1, server=server, db=config.db_path, redis=config.redis, cpus=_pinned(cpus, 1))
        import uvloop

        uvloop.run(serve_until_stopped(app, bind_address(host, port), grace, server))
        return 0
    create_app(attrs.evolve(config, serve_host=host))  # the same check before any worker starts (and the same warnings, once)
    # every worker's socket bound now: an address in use fails here, in one line
    first = [listening_socket(host, port)]
    port = first[0].getsockname()[1]  # port 0: the others join the one the first got
    supervisor = Supervisor(
        lambda: first.pop() if first else listening_socket(host, port),
        workers=workers, grace=grace, drain=config.shutdown_drain_seconds, env=env, json=json, server=server, cpus=cpus,
    )  # fmt: skip
    log.info("serving", address=address, workers=workers, server=server, db=config.db_path, redis=config.redis, cpus=_pinned(cpus, workers))
    return supervisor.run()


def _pinned(cpus: list[int] | None, workers: int) -> list[int] | None:
    """The CPU of each worker, in order, for the log (``None``: not pinned)."""
    return None if cpus is None else [cpu_for_worker(n, cpus) for n in range(1, workers + 1)]


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` with ``SO_REUSEPORT`` (one per worker)
    and listening."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it
        sock.bind((host.strip("[]"), port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


async def serve_until_stopped(app: Any, bind: str, grace: float, server: str = "hypercorn", *, parent: int | None = None) -> None:
    """Serve ``app`` on ``bind`` (``HOST:PORT``, or ``fd://N``: an inherited
    listening socket) with ``server`` until SIGTERM or SIGINT — ``/readyz`` says
    503 at once, the server stops accepting ``shutdown_drain_seconds`` later and
    gives requests ``grace`` seconds; a second signal stops it at once — or, with
    ``parent``, until that process is gone (a worker never outlives its supervisor)."""
    from ..routing.readiness import drain_then

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    services = app.services
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, drain_then, services, services.config.shutdown_drain_seconds, stop.set)
    watch = asyncio.ensure_future(_watch_parent(parent, stop)) if parent is not None else None
    freeze_startup_objects()
    try:
        if server == "uvicorn":
            from .server_uvicorn import serve_uvicorn, uvicorn_config

            if bind.startswith("fd://"):
                sockets = [socket.socket(fileno=int(bind[5:]))]
                await serve_uvicorn(uvicorn_config(app), stop, grace=grace, sockets=sockets)
            else:
                host, _, port = bind.rpartition(":")
                await serve_uvicorn(uvicorn_config(app, host=host.strip("[]"), port=int(port)), stop, grace=grace)
        else:
            from hypercorn.asyncio import serve as hypercorn_serve

            await hypercorn_serve(app, hypercorn_config(bind, grace), shutdown_trigger=stop.wait)
    finally:
        if watch is not None:
            watch.cancel()
    log.info("stopped")


def freeze_startup_objects() -> None:
    """Keep what start-up built (modules, plugins, the app: tens of thousands of
    long-lived objects) out of the cyclic garbage collector's full passes, which
    would otherwise walk them all again and again while serving (``gc.freeze``).

    Then let the young generation grow to :data:`YOUNG_COLLECTION_THRESHOLD`
    objects before it is collected. With Python's 700, a collection runs every
    few requests, while dozens are in flight: their objects, alive for the whole
    request, survive it, move to the middle generation and are walked again there.
    With 10,000, most have been freed by their reference counts before a
    collection comes (about 5 % of the CPU per request at concurrency 50); the
    young generation stays a few megabytes at most."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)


async def _watch_parent(parent: int, stop: asyncio.Event) -> None:
    while os.getppid() == parent:
        await asyncio.sleep(1.0)
    log.warning("supervisor gone: draining", supervisor=parent)
    stop.set()
