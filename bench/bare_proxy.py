"""The floor: a bare proxy, the least a Python gateway on the gateway's server can do.

``python bench/bare_proxy.py --port 9003 --upstream http://127.0.0.1:9001`` serves
``POST`` on every path through Starlette on hypercorn + uvloop (configured as
``gateway_core.runtime.server`` configures it, see ``hello_app.serve``) and forwards the body,
the path and query, and the key headers of the three protocols the bench speaks
(``Authorization``, ``x-api-key`` with ``anthropic-version``, ``x-goog-api-key``) with one
shared aiohttp session to the upstream; a stream is relayed chunk by chunk as it arrives. No key check, no policies, no billing,
no log: ``make bench`` runs it beside the gateway so that each figure has a floor.
``--server uvicorn``: on uvicorn, as ``relaygate serve --server uvicorn`` (``bench/overhead.py --server``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hello_app import SERVERS, serve


FORWARDED = ("authorization", "x-api-key", "anthropic-version", "x-goog-api-key")


def bare_proxy(upstream: str) -> Starlette:
    session: list[aiohttp.ClientSession] = []

    @contextlib.asynccontextmanager
    async def lifespan(app):
        session.append(aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)))
        yield
        await session[0].close()

    async def forward(request: Request) -> Response:
        headers = {name: value for name in FORWARDED if (value := request.headers.get(name)) is not None}
        headers["Content-Type"] = "application/json"
        url = upstream + request.url.path + (f"?{request.url.query}" if request.url.query else "")
        answer = await session[0].post(url, data=await request.body(), headers=headers)
        kind = answer.headers.get("Content-Type", "application/json")
        if not kind.startswith("text/event-stream"):
            return Response(await answer.read(), answer.status, media_type=kind)

        async def relay():
            try:
                async for chunk in answer.content.iter_any():
                    yield chunk
            finally:
                answer.release()

        return StreamingResponse(relay(), answer.status, media_type=kind)

    return Starlette(routes=[Route("/{path:path}", forward, methods=["POST"])], lifespan=lifespan)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="the fake upstream's base URL, e.g. http://127.0.0.1:9001")
    parser.add_argument("--server", choices=SERVERS, default="hypercorn", help="the HTTP server (default hypercorn)")
    args = parser.parse_args(argv)
    import uvloop

    uvloop.run(serve(bare_proxy(args.upstream.rstrip("/")), args.host, args.port, args.server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
