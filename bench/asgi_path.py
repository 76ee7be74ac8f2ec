"""The request path without the HTTP server: CPU per request of the gateway's ASGI
app beside the floor's, both driven in this process.

``python bench/asgi_path.py [--requests N] [--concurrency C] [--stream] [--tokens N --pace MS] [--agent] [--profile FILE]``

The fake upstream (``fast_upstream.py``) runs as its own process on the other CPU;
this process builds the gateway's app (``create_app``, a temporary SQLite file seeded
through the CLI, priced model, the ``openai`` plugin only) and the floor's app
(``bare_proxy.bare_proxy``), runs their lifespans, and calls each with ASGI
messages made here: no hypercorn, no h11, no client sockets. What is left is what
the app itself costs — our request path, aiohttp to the upstream, the SQLite writer
thread — measured as this process's CPU time (every thread) per request, in
alternating rounds. The server's share, which ``overhead.py`` includes, is the same
for both arms, so this ratio is the one our own code decides.

``--profile FILE`` writes a cProfile of the gateway arm (or of the only arm run) (deterministic call counts;
the times are inflated by the profiler).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bare_proxy import bare_proxy  # noqa: E402
from loadgen import request_body  # noqa: E402
from shapes import agent, paced  # noqa: E402
from seeding import seeded_workdir  # noqa: E402


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Lifespan:
    """Runs an ASGI app's lifespan protocol; ``state`` is what requests see."""

    def __init__(self, app) -> None:
        self.app = app
        self.state: dict = {}
        self._inbox: asyncio.Queue = asyncio.Queue()
        self._outbox: asyncio.Queue = asyncio.Queue()
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": self.state}
        self._task = asyncio.ensure_future(self.app(scope, self._inbox.get, self._outbox.put))
        await self._inbox.put({"type": "lifespan.startup"})
        message = await self._outbox.get()
        if message["type"] != "lifespan.startup.complete":
            raise SystemExit(f"asgi_path: the app did not start: {message}")

    async def stop(self) -> None:
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._outbox.get()
        if self._task is not None:
            await self._task


class Caller:
    """Calls one app with one request's ASGI messages and checks the answer."""

    def __init__(self, app, state: dict, key: str, stream: bool, body: bytes | None = None) -> None:
        self.app = app
        self.state = state
        self.body = request_body(stream) if body is None else body
        self.stream = stream
        self.headers = [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {key}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self.body)).encode()),
        ]

    async def one(self) -> None:
        scope = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
            "query_string": b"", "root_path": "", "headers": self.headers, "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 8080), "state": dict(self.state), "extensions": {},
        }
        sent_body = False
        parts: list[bytes] = []
        status = 0
        never = asyncio.Event()

        async def receive():
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": self.body, "more_body": False}
            await never.wait()  # the client never disconnects
            return {"type": "http.disconnect"}

        async def send(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        await self.app(scope, receive, send)
        body = b"".join(parts)
        if status != 200 or (self.stream and not body.endswith(b"data: [DONE]\n\n")) or (not self.stream and b'"choices"' not in body):
            raise SystemExit(f"asgi_path: a wrong answer ({status}): {body[:200]!r}")


def writer_counts(app) -> tuple[int, int] | None:
    """The SQLite writer's committed transactions and writes so far (``None`` for the floor or another store)."""
    services = getattr(app, "services", None)
    stats = getattr(getattr(services, "store", None), "writer_stats", None)
    return (stats.transactions, stats.writes) if stats is not None else None


async def run_batch(caller: Caller, requests: int, concurrency: int) -> tuple[float, float]:
    """CPU seconds per request for ``requests`` calls at ``concurrency``: every
    thread's, and the event loop thread's alone."""
    left = requests

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await caller.one()

    started, loop_started = time.process_time(), time.thread_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return (time.process_time() - started) / requests, (time.thread_time() - loop_started) / requests


async def measure(args, gateway_key: str, upstream: str, workdir: Path) -> None:
    from gateway_core.runtime.app import create_app
    from gateway_core.config import load_config
    from gateway_core.runtime.logs import configure_logging
    from gateway_core.runtime.server import freeze_startup_objects

    # the gateway's JSON lines go to a file, as the server's stdout does in production; results to stderr
    log_file = open(workdir / "gateway.log", "wb")
    sys.stdout.flush()
    os.dup2(log_file.fileno(), 1)
    configure_logging(json=True)

    gateway = create_app(load_config(str(workdir / "relaygate.db"), str(workdir / "plugins.toml")))
    floor = bare_proxy(upstream)
    spans = {name: span for name, span in (("gateway", Lifespan(gateway)), ("floor", Lifespan(floor))) if name in args.arms.split(",")}
    for span in spans.values():
        await span.start()
    freeze_startup_objects()  # as `relaygate serve` does once started
    body = paced(args.tokens, args.pace).body if args.tokens else agent(args.stream).body if args.agent else None
    callers = {name: Caller(span.app, span.state, gateway_key, args.stream, body) for name, span in spans.items()}
    for caller in callers.values():  # warm-up
        await run_batch(caller, args.warmup, args.concurrency)
    figures: dict[str, list[float]] = {name: [] for name in callers}
    loop_figures: dict[str, list[float]] = {name: [] for name in callers}
    batches: dict[str, list[float]] = {name: [] for name in callers}
    order = list(callers)
    profiler = cProfile.Profile() if args.profile else None
    profiled = "gateway" if "gateway" in callers else order[0]  # the gateway's arm, or the only one
    for round_number in range(args.rounds):
        for name in order if round_number % 2 == 0 else reversed(order):
            if profiler is not None and name == profiled:
                profiler.enable()
            stats = writer_counts(spans[name].app)
            every, loop_only = await run_batch(callers[name], args.requests, args.concurrency)
            if stats is not None:
                after = writer_counts(spans[name].app)
                assert after is not None
                batches[name].append((after[1] - stats[1]) / max(1, after[0] - stats[0]))
            figures[name].append(every)
            loop_figures[name].append(loop_only)
            if profiler is not None and name == profiled:
                profiler.disable()
    for span in spans.values():
        await span.stop()
    kind = ("stream" if args.stream else "plain") + (", free model" if args.free else ", priced model")
    say(f"asgi_path: {kind}, concurrency {args.concurrency}, {args.requests} requests x {args.rounds} rounds per arm (CPU ms per request, all threads)")
    best = {name: min(values) * 1000 for name, values in figures.items()}
    for name, values in figures.items():
        batch = f"  writes per transaction {statistics.median(batches[name]):.2f}" if batches[name] else ""
        say(f"  {name:8} best {best[name]:.3f}  median {statistics.median(values) * 1000:.3f}  event loop {statistics.median(loop_figures[name]) * 1000:.3f}  runs {[round(v * 1000, 3) for v in values]}{batch}")
    if len(best) == 2:
        say(f"  gateway - floor = {best['gateway'] - best['floor']:.3f} ms; gateway / floor = {best['gateway'] / best['floor']:.2f}")
    if profiler is not None:
        profiler.dump_stats(args.profile)
        say(f"  profile of the {profiled} arm: {args.profile}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=0, help="streams of this many content chunks (implies --stream), --pace ms apart")
    parser.add_argument("--pace", type=float, default=0.0, help="milliseconds between the chunks of a --tokens stream (default 0)")
    parser.add_argument("--agent", action="store_true", help="send the coding agent's body (bench/shapes.py) instead of the tiny one")
    parser.add_argument("--profile", default=None)
    parser.add_argument("--arms", default="gateway,floor", help="which apps to run (gateway, floor)")
    parser.add_argument("--warmup", type=int, default=300, help="requests per arm before measuring")
    parser.add_argument("--free", action="store_true", help="make the model free: no reservation, no charge")
    args = parser.parse_args(argv)
    args.stream = args.stream or bool(args.tokens)
    import uvloop

    with seeded_workdir("relaygate-asgi-path-", chunks=args.chunks, free=args.free) as (workdir, upstream, key):
        if (os.cpu_count() or 1) >= 2:
            os.sched_setaffinity(0, {0})  # the upstream has CPU 1
        uvloop.run(measure(args, key, upstream, workdir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
