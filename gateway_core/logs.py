"""Logging set-up: structlog, JSON lines on stdout, readable lines in a terminal.

Configured once per process, at start-up; the request path only binds context
(the request id) and emits events. Secrets never go into an event: the API key
is carried as its hash, upstream keys not at all.
"""

from __future__ import annotations

import logging
import sys

import orjson
import structlog


def configure_logging(level: str = "info", json: bool | None = None) -> None:
    """Set up structlog and the standard library's logging to match."""
    if json is None:
        json = not sys.stdout.isatty()
    numeric = logging.getLevelName(level.upper())
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    factory: structlog.BytesLoggerFactory | structlog.PrintLoggerFactory
    if json:
        renderer = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        factory = structlog.BytesLoggerFactory()
        processors: list[structlog.typing.Processor] = [*shared, structlog.processors.format_exc_info, renderer]
    else:
        factory = structlog.PrintLoggerFactory()
        processors = [*shared, structlog.dev.ConsoleRenderer()]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=numeric, format="%(name)s %(levelname)s %(message)s", stream=sys.stderr)
    logging.getLogger("hypercorn.access").disabled = True
