"""Where one request's time goes at concurrency 1, step by step.

``.venv/bin/python bench/latency_breakdown.py [--requests 3000] [--free]`` seeds a
store like ``overhead.py``, then serves the gateway app *in this script's child
process* (hypercorn + uvloop, pinned like ``relaygate serve`` in the bench) with
timing wrappers around a few steps of the request path, sends sequential
requests and prints, for each step, its wall time per request (p50, p90, mean).

The wrapped steps are looked up by name (``Store.write`` per written function,
``Store.read``, ``Pipeline.admit``, the ``openai`` channel's ``send`` up to the
upstream's headers, ``Recorder.record`` and the whole endpoint); a
name that no longer exists is skipped and reported, so the script survives
refactors of the path, but only measures what it still finds.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import importlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent

WRAPPED = (  # (module, class, method, label); "write"/"read" are labelled by the function they run
    ("gateway_core.store.sqlite_store", "Store", "write", None),
    ("gateway_core.store.sqlite_store", "Store", "read", None),
    ("gateway_core.policy", "Pipeline", "admit", "policies (Pipeline.admit)"),
    ("gateway_openai.channel", "OpenAIChannel", "send", "upstream call, to its headers (OpenAIChannel.send)"),
    ("gateway_core.request.recorder", "Recorder", "record", "record: settle + usage row (Recorder.record)"),
    ("gateway_core.request.relay", "ProtocolEndpoint", "__call__", "whole endpoint (ProtocolEndpoint.__call__)"),
)


def instrument(timings: dict[str, list[float]]) -> list[str]:
    """Wrap the steps in place; return the ones that could not be found."""
    missing = []
    for module_name, class_name, method, label in WRAPPED:
        try:
            owner = getattr(importlib.import_module(module_name), class_name)
            original = getattr(owner, method)
        except (ImportError, AttributeError):
            missing.append(f"{module_name}.{class_name}.{method}")
            continue

        def wrap(original=original, method=method, label=label):
            @functools.wraps(original)
            async def timed(*args, **kwargs):
                started = time.perf_counter()
                try:
                    return await original(*args, **kwargs)
                finally:
                    name = label
                    if name is None:  # Store.write / Store.read: by the function they run
                        fn = args[1] if len(args) > 1 else None
                        name = f"store.{method}({getattr(fn, '__name__', fn)})"
                    timings[name].append(time.perf_counter() - started)

            return timed

        setattr(owner, method, wrap())
    return missing


def serve(db: str, plugins: str, port: int) -> int:
    """The child: the gateway app, instrumented, until SIGTERM; then the timings on stdout."""
    import uvloop
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config as HypercornConfig

    timings: dict[str, list[float]] = collections.defaultdict(list)
    missing = instrument(timings)
    from gateway_core.runtime.app import create_app
    from gateway_core.config import load_config
    from gateway_core.runtime.logs import configure_logging

    async def main() -> None:
        os.environ["RELAYGATE_DB"] = db
        configure_logging()
        app = create_app(load_config(db, plugins))
        config = HypercornConfig()
        config.bind = [f"127.0.0.1:{port}"]
        config.accesslog = None
        config.keep_alive_timeout = 75
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await hypercorn_serve(app, config, shutdown_trigger=stop.wait)

    uvloop.run(main())
    for name in missing:
        print(f"not measured (no longer exists): {name}", file=sys.stderr)
    rows = sorted(timings.items(), key=lambda item: -sum(item[1]))
    print(f"{'step':<58} {'calls':>6} {'p50 ms':>7} {'p90 ms':>7} {'mean ms':>8}", file=sys.stderr)
    for name, values in rows:
        values.sort()
        n = len(values)
        print(f"{name:<58} {n:>6} {values[n // 2] * 1e3:>7.3f} {values[int(n * 0.9)] * 1e3:>7.3f} {sum(values) / n * 1e3:>8.3f}", file=sys.stderr)
    return 0


async def drive(args) -> int:
    from loadgen import Recorder, Target, new_session, one_request, percentile, request_body
    from seeding import BENCH_PLUGINS, seed
    from processes import Child, Placement, free_port, wait_http

    placement = Placement(True)
    tmp = Path(tempfile.mkdtemp(prefix="relaygate-breakdown-"))
    up_port, gw_port = free_port(), free_port()
    upstream = Child("fake upstream", placement.command(placement.upstream, [
        sys.executable, str(HERE / "fast_upstream.py"), "--port", str(up_port)]), tmp / "upstream.log", HERE)  # fmt: skip
    gateway = None
    try:
        up_url = f"http://127.0.0.1:{up_port}"
        wait_http(up_url + "/v1/chat/completions", upstream, method="POST", body=request_body(False))
        plugins = tmp / "plugins.toml"
        plugins.write_text(BENCH_PLUGINS)
        key = seed(tmp / "relaygate.db", tmp, plugins, up_url, args.free)
        gateway = subprocess.Popen(
            placement.command(placement.server, [sys.executable, __file__, "--serve", str(tmp / "relaygate.db"), str(plugins), str(gw_port)]),
            cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        if placement.loadgen is not None:
            os.sched_setaffinity(0, {placement.loadgen})
        gw_url = f"http://127.0.0.1:{gw_port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(gw_url + "/healthz", timeout=1):
                    break
            except OSError:
                if gateway.poll() is not None or time.monotonic() > deadline:
                    gateway.kill()
                    raise SystemExit(f"the gateway did not start: {gateway.stderr.read().decode(errors='replace')[-2000:]}") from None
                time.sleep(0.05)
        target, body = Target("gateway", gw_url, key), request_body(False)
        rec = Recorder()
        async with new_session(1) as session:
            for _ in range(200):  # warm-up
                await one_request(session, target, body, False, None)
            for _ in range(args.requests):
                await one_request(session, target, body, False, rec)
        os.killpg(gateway.pid, signal.SIGTERM)
        _, err = gateway.communicate(timeout=30)
        lat = sorted(rec.latencies)
        print(f"{args.requests} sequential requests through the gateway ({'free' if args.free else 'priced'} model); "
              f"client-side latency p50 {percentile(lat, 0.5) / 1e6:.3f} ms, p90 {percentile(lat, 0.9) / 1e6:.3f} ms, errors {dict(rec.errors)}")  # fmt: skip
        lines = err.decode(errors="replace").splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith(("step", "not measured"))), max(0, len(lines) - 30))
        print("\n".join(lines[start:]))
        return 1 if rec.errors else 0
    finally:
        if gateway is not None and gateway.poll() is None:
            os.killpg(gateway.pid, signal.SIGKILL)
        upstream.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--free", action="store_true", help="a free model: no reservation or settlement")
    parser.add_argument("--serve", nargs=3, metavar=("DB", "PLUGINS", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        db, plugins, port = args.serve
        return serve(db, plugins, int(port))
    import uvloop

    return uvloop.run(drive(args))


if __name__ == "__main__":
    sys.exit(main())
