"""Instructions per request of the gateway and of the floor served over HTTP,
counted by valgrind: what the server adds to each app, free of the machine's load.

``python bench/server_instructions.py [--arms gateway,floor] [--server hypercorn] [--small 200] [--large 800] [--concurrency 1]``

``bench/asgi_instructions.py`` counts the apps without a server. This runs each
app on hypercorn or uvicorn (the gateway as ``relaygate serve`` serves it, the
floor as ``bench/bare_proxy.py`` does), inside ``valgrind --tool=callgrind``,
twice per arm: a load from this process (outside valgrind) sends ``--small`` and
then ``--large`` requests after the same warm-up, SIGTERM stops the server, and
the difference of the two instruction totals over the difference of the request
counts is the cost of one request: start-up, warm-up and shutdown (the gateway's
drain included) cancel out.
Every thread of the served process is counted (the SQLite writer too); the fake
upstream and the load run outside valgrind. Minus ``asgi_instructions.py``'s
figure for the same arm, what is left is the server's share. A run takes one to
two minutes. Needs ``valgrind`` on the PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from asgi_instructions import per_request_of, total_of  # noqa: E402
from loadgen import request_body  # noqa: E402
from processes import free_port  # noqa: E402
from seeding import seeded_workdir  # noqa: E402



async def _served(arm: str, server: str, workdir: Path, upstream: str, port: int) -> None:
    """Inside valgrind: serve ``arm`` on ``server`` until SIGTERM, the gateway as
    ``relaygate serve`` does, the floor as ``bench/bare_proxy.py`` does."""
    from gateway_core.runtime.server import freeze_startup_objects, serve_until_stopped

    if arm == "gateway":
        from gateway_core.runtime.app import create_app
        from gateway_core.config import load_config
        from gateway_core.runtime.logs import configure_logging

        configure_logging(json=True)
        app = create_app(load_config(str(workdir / "relaygate.db"), str(workdir / "plugins.toml")))
        await serve_until_stopped(app, f"127.0.0.1:{port}", 5.0, server)
        return
    from bare_proxy import bare_proxy
    from hello_app import serve

    app = bare_proxy(upstream)
    freeze_startup_objects()
    await serve(app, "127.0.0.1", port, server)


async def _load(port: int, key: str, requests: int, concurrency: int, stream: bool) -> None:
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    body = request_body(stream)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    left = requests

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            async with session.post(url, data=body, headers=headers) as answer:
                data = await answer.read()
                if answer.status != 200 or (stream and not data.endswith(b"data: [DONE]\n\n")):
                    raise SystemExit(f"server_instructions: a wrong answer ({answer.status}): {data[:200]!r}")

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))


def _wait_listening(port: int, child: subprocess.Popen, timeout: float = 600.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit(f"server_instructions: the server exited ({child.returncode})")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise SystemExit("server_instructions: the server never listened")


def instructions(arm: str, requests: int, args: argparse.Namespace, workdir: Path, upstream: str, key: str) -> int:
    port = free_port()
    out = workdir / f"callgrind.{arm}.{requests}"
    argv = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
        sys.executable, __file__, "--serve", arm, "--server", args.server, "--workdir", str(workdir), "--upstream", upstream,
        "--port", str(port),
    ]  # fmt: skip
    with open(workdir / f"{arm}.{requests}.log", "wb") as log:
        child = subprocess.Popen(argv, stdout=log, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _wait_listening(port, child)
            asyncio.run(_load(port, key, args.warmup, args.concurrency, args.stream))
            asyncio.run(_load(port, key, requests, args.concurrency, args.stream))
            child.send_signal(signal.SIGTERM)
            _, stderr = child.communicate(timeout=600)
        finally:
            if child.poll() is None:
                child.kill()
    return total_of("server_instructions", child.returncode, stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--arms", default="gateway,floor")
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=800)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--server", choices=("hypercorn", "uvicorn"), default="hypercorn", help="the HTTP server of both arms (default hypercorn)")
    parser.add_argument("--serve", choices=("gateway", "floor"), help=argparse.SUPPRESS)  # inside valgrind
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import uvloop

    if args.serve:
        uvloop.run(_served(args.serve, args.server, Path(args.workdir), args.upstream, args.port))
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("server_instructions: valgrind is not installed")
    per_request: dict[str, float] = {}
    with seeded_workdir("relaygate-server-callgrind-") as (workdir, upstream, key):
        for arm in args.arms.split(","):
            per_request[arm] = per_request_of(lambda n: instructions(arm, n, args, workdir, upstream, key), args.small, args.large)
            print(f"{arm:8} {per_request[arm] / 1000:10.1f} thousand instructions per request (app and {args.server})", flush=True)
    if "gateway" in per_request and "floor" in per_request:
        print(f"gateway / floor = {per_request['gateway'] / per_request['floor']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
