"""The floor: a hello-world ASGI app served like the gateway (hypercorn + uvloop).

``python bench/hello_app.py --port 9002 [--starlette]`` serves ``POST`` on any
path (or on ``/v1/chat/completions`` through a Starlette ``Router`` with
``--starlette``): it reads the request body and answers a fixed JSON body of
the fake upstream's size. Hypercorn is configured as ``gateway_core.runtime.server``
configures it (uvloop, no access log, keep-alive 75 s), so its CPU per request
is what the server alone costs, before any gateway work. ``--server uvicorn``
serves it as ``relaygate serve --server uvicorn`` does; ``--server granian``
(installed apart: ``pip install granian``) on granian's embedded server, for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from wires import OPENAI_COMPLETION as COMPLETION

HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(COMPLETION)).encode())]


async def hello(scope, receive, send) -> None:
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": COMPLETION})


class Hello:
    """An ASGI app object (not a function), as the gateway's endpoints are, so that
    Starlette's ``Route`` calls it as ASGI rather than as a request handler."""

    async def __call__(self, scope, receive, send) -> None:
        await hello(scope, receive, send)


def starlette_app():
    from starlette.routing import Route, Router

    return Router(routes=[Route("/v1/chat/completions", Hello(), methods=["POST"])])


SERVERS = ("hypercorn", "uvicorn", "granian")


async def serve(app, host: str, port: int, server: str = "hypercorn") -> None:
    """Serve ``app`` until SIGTERM or SIGINT on ``server``, configured as
    ``gateway_core.runtime.server`` configures it (``granian``: its embedded server, for
    comparison only)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if server == "granian":
        await serve_granian(app, host, port, stop)
        return
    if server == "uvicorn":
        from gateway_core.runtime.server_uvicorn import serve_uvicorn, uvicorn_config

        await serve_uvicorn(uvicorn_config(app, host=host, port=port), stop, grace=5)
        return
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = "-"
    config.keep_alive_timeout = 75
    config.graceful_timeout = 5
    await hypercorn_serve(app, config, shutdown_trigger=stop.wait)


async def serve_granian(app, host: str, port: int, stop: asyncio.Event) -> None:
    from granian.constants import Interfaces
    from granian.server.embed import Server

    server = Server(app, address=host, port=port, interface=Interfaces.ASGI, log_access=False, backlog=1024)
    stopper = asyncio.ensure_future(stop.wait())
    stopper.add_done_callback(lambda _: server.stop())
    await server.serve()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--starlette", action="store_true", help="route through a Starlette Router, as the gateway does")
    parser.add_argument("--server", choices=SERVERS, default="hypercorn", help="the HTTP server (default hypercorn)")
    args = parser.parse_args(argv)
    import uvloop

    uvloop.run(serve(starlette_app() if args.starlette else hello, args.host, args.port, args.server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
