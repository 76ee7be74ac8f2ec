"""Serving the app with hypercorn on uvloop, with a graceful shutdown.

On SIGTERM or SIGINT ``GET /readyz`` turns 503 at once; after
``shutdown_drain_seconds`` (default 0) the server stops accepting connections, lets in-flight
requests and streams finish (up to ``[gateway] shutdown_grace_seconds``), then
cuts the rest (a stream is charged what it delivered, logged ``shutdown``, and
ends with its protocol's error event), and the app's lifespan closes upstream
connections and flushes pending writes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal

import structlog
from hypercorn.config import Config as HypercornConfig

from .config import Config
from .logs import configure_logging
from .metrics import prepare_workers
from .readiness import drain_then

log = structlog.get_logger("relaygate.server")


def bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def hypercorn_config(host: str, port: int, workers: int, grace: float = 30.0) -> HypercornConfig:
    config = HypercornConfig()
    config.bind = [bind_address(host, port)]
    config.workers = workers
    config.worker_class = "uvloop"
    config.graceful_timeout = grace
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # one handler: the root's
    config.keep_alive_timeout = 75
    config.application_path = "gateway_core.app:create_app_from_env()"
    return config


def serve(config: Config, *, host: str = "127.0.0.1", port: int = 8080, workers: int = 1) -> int:
    """Run the gateway until a shutdown signal; returns the exit status."""
    configure_logging()
    prepare_workers(workers)  # metrics of several workers added up: before any worker starts
    # worker processes (and the app factory) read their configuration from here
    os.environ["RELAYGATE_DB"] = config.db_path
    if config.source:
        os.environ["RELAYGATE_PLUGINS"] = os.path.abspath(config.source)
    if config.redis:
        os.environ["RELAYGATE_REDIS"] = config.redis
    from .app import create_app

    app = create_app(config)  # loads plugins now: a bad configuration fails before binding
    hconfig = hypercorn_config(host, port, workers, config.shutdown_grace_seconds)
    log.info("serving", address=f"http://{bind_address(host, port)}", workers=workers, db=config.db_path, redis=config.redis)
    if workers > 1:
        from hypercorn.run import run

        return run(hconfig)
    import uvloop

    uvloop.run(_serve_one(app, hconfig, config.shutdown_drain_seconds))
    return 0


async def _serve_one(app, hconfig: HypercornConfig, drain_seconds: float = 0.0) -> None:
    from hypercorn.asyncio import serve as hypercorn_serve

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, drain_then, app.services, drain_seconds, stop.set)
    await hypercorn_serve(app, hconfig, shutdown_trigger=stop.wait)
    log.info("stopped")
