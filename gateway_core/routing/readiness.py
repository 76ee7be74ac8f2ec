"""``GET /readyz``: whether this replica should get traffic, and if not, why.

Ready means: not shutting down, the store answers and its schema has every
migration this code knows, Redis answers (when configured), and at least one
enabled channel has its type loaded. The answer is 200 or 503 with a JSON body
naming each check and what is wrong. ``GET /healthz`` only says the process is
alive (:class:`gateway_core.runtime.app.StatusEndpoint`).

A shutdown starts draining (:meth:`Readiness.drain`, called by the server on
SIGTERM): from then on ``/readyz`` answers 503, while requests are still served
for ``[gateway] shutdown_drain_seconds`` so that a load balancer stops sending
new ones before the replica stops accepting them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import orjson
import structlog

from ..base.asgi import send_body

if TYPE_CHECKING:
    from ..gateway import Gateway
    from ..runtime.registry import Registry
    from ..shared_state import SharedState

log = structlog.get_logger("relaygate.server")

CHECK_TIMEOUT = 2.0  # seconds a check may take before it counts as failed
OK = "ok"


class Readiness:
    """Whether this app is draining (a shutdown started)."""

    __slots__ = ("draining",)

    def __init__(self) -> None:
        self.draining = False

    def drain(self) -> None:
        self.draining = True


if TYPE_CHECKING:

    class Checked(Gateway, Protocol):
        """The gateway as the readiness checks see it: with its :class:`Readiness`, its
        shared state and the whole registry (the migrations, the shared-state kind)."""

        @property
        def readiness(self) -> Readiness: ...

        @property
        def shared(self) -> SharedState: ...

        @property
        def registry(self) -> Registry: ...


async def check(services: Checked) -> tuple[dict[str, str], dict[str, str]]:
    """Each check's result (``ok``, or a short fact), and the checks that failed
    with what is wrong."""
    checks: dict[str, str] = {}
    problems: dict[str, str] = {}

    def report(name: str, fact: str, problem: str | None = None) -> None:
        checks[name] = problem or fact
        if problem is not None:
            problems[name] = problem

    report("shutdown", "not started", "draining: the gateway is shutting down" if services.readiness.draining else None)
    timeout = min(CHECK_TIMEOUT, services.config.db_timeout)
    try:
        rows = await asyncio.wait_for(services.sql.fetch_all("SELECT name FROM schema_migrations"), timeout)
    except Exception as exc:  # any failure to answer: unreachable, timed out, refused
        report("store", "", f"unreachable: {_describe(exc, timeout)}")
        report("migrations", "", "unknown: the store is unreachable")
    else:
        report("store", OK)
        pending = sorted({name for name, _ in services.registry.migrations} - {row["name"] for row in rows})
        report("migrations", OK, f"pending: {', '.join(pending)} (run `relaygate migrate`)" if pending else None)
    shared = services.registry.shared_state_kind(services.config)
    if shared.across_processes:  # state shared with other workers and replicas: it must answer
        try:
            await asyncio.wait_for(services.shared.ping(), timeout)
        except Exception as exc:
            report(shared.name, "", f"unreachable: {_describe(exc, timeout)}")
        else:
            report(shared.name, OK)
    try:
        index = await asyncio.wait_for(services.router.index(), timeout)
    except Exception as exc:
        report("channels", "", f"unknown: {_describe(exc, timeout)}")
    else:
        served = {id(route) for routes in index.by_group_model.values() for route in routes}
        report("channels", f"{len(served)} enabled", None if served else "none enabled (with its type loaded)")
    return checks, problems


def drain_then(services: Checked, seconds: float, stop: Callable[[], None]) -> None:
    """A shutdown signal: drain (``/readyz`` answers 503), then ``stop`` after
    ``seconds``; a second signal stops at once."""
    if services.readiness.draining or seconds <= 0:
        services.readiness.drain()
        stop()
        return
    services.readiness.drain()
    log.info("draining", seconds=seconds)
    asyncio.get_running_loop().call_later(seconds, stop)


class ReadyEndpoint:
    """``GET /readyz`` (and ``HEAD``): 200 when ready, else 503; the body says why."""

    def __init__(self, services: Checked) -> None:
        self.services = services

    async def __call__(self, scope, receive, send) -> None:
        checks, problems = await check(self.services)
        body = orjson.dumps({"status": "not_ready" if problems else "ready", "checks": checks, "problems": problems})
        status = 503 if problems else 200
        if scope["method"] == "HEAD":
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await send_body(send, status, body, b"application/json", [(b"cache-control", b"no-store")])


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return f"no answer within {timeout:g} s"
    return f"{type(exc).__name__}: {exc}"[:300]
