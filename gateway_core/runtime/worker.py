"""One worker process of ``relaygate serve --workers N`` (started by
:mod:`gateway_core.runtime.supervisor`, never by hand).

It reads its configuration from the environment the supervisor gave it
(``RELAYGATE_DB``, ``RELAYGATE_PLUGINS``, ``RELAYGATE_REDIS``), serves the app
with hypercorn (or uvicorn: ``--server``) on uvloop on the listening socket it inherited, drains on
SIGTERM or SIGINT, and drains too when its supervisor is gone.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import TracebackType

import structlog

from ..config import SERVERS

log = structlog.get_logger("relaygate.worker")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway_core.runtime.worker")
    parser.add_argument("--worker", type=int, required=True, help="this worker's number, 1…N")
    parser.add_argument("--fd", type=int, required=True, help="the inherited listening socket")
    parser.add_argument("--grace", type=float, required=True, help="seconds in-flight requests get on shutdown")
    parser.add_argument("--log", choices=("json", "console"), default="json")
    parser.add_argument("--server", choices=SERVERS, default="hypercorn", help="the HTTP server")
    parser.add_argument("--cpu", type=int, help="the CPU this worker's threads run on (serve --pin-workers)")
    args = parser.parse_args(argv)
    parent = os.getppid()
    if args.cpu is not None:  # first: every thread started later inherits it
        from .cpu_pinning import pin_process

        pin_process(args.cpu)

    from .logs import configure_logging

    configure_logging(json=args.log == "json", worker=args.worker)
    sys.excepthook = _log_uncaught
    import uvloop

    from .app import create_app_from_env
    from .server import serve_until_stopped

    app = create_app_from_env()
    uvloop.run(serve_until_stopped(app, f"fd://{args.fd}", args.grace, args.server, parent=parent))
    return 0


def _log_uncaught(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    """An exception that ends the worker: one record, with its traceback."""
    log.critical("worker failed", exc_info=(kind, error, trace))


if __name__ == "__main__":
    sys.exit(main())
