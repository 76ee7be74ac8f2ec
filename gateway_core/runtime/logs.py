"""Logging set-up: structlog, JSON lines on stdout, readable lines in a terminal.

Configured once per process, at start-up; the request path only binds context
(the request id) and emits events. Secrets never go into an event: the API key
is carried as its hash, upstream keys not at all.

In JSON mode every record is one JSON line on stdout, the standard library's
records (hypercorn's, asyncio's) included. With several workers each line
carries ``worker``: 0 for the supervising parent, 1…N for the workers.
"""

from __future__ import annotations

import datetime
import logging
import sys
import time
from collections.abc import MutableMapping
from typing import Any

import orjson
import structlog


def configure_logging(level: str = "info", json: bool | None = None, *, worker: int | None = None) -> None:
    """Set up structlog and the standard library's logging to match.

    ``json``: JSON lines (default: when stdout is not a terminal); ``worker``:
    the process's number among several, added to every record."""
    if json is None:
        json = wants_json()
    numeric = logging.getLevelName(level.upper())
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        UtcTimestamp(),
    ]
    if worker is not None:
        shared.append(_WorkerField(worker))
    factory: structlog.BytesLoggerFactory | structlog.PrintLoggerFactory
    handler: logging.Handler
    if json:
        renderer = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        factory = structlog.BytesLoggerFactory()
        processors: list[structlog.typing.Processor] = [*shared, format_exc_info_if_any, renderer]
        handler = logging.StreamHandler(sys.stdout)  # the library's records as JSON lines too
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,
                    structlog.processors.JSONRenderer(serializer=_json_text),
                ],
            )
        )
    else:
        factory = structlog.PrintLoggerFactory()
        processors = [*shared, structlog.dev.ConsoleRenderer()]
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=numeric, handlers=[handler], force=True)
    logging.getLogger("hypercorn.access").disabled = True


def wants_json() -> bool:
    """Whether logs go out as JSON lines: when stdout is not a terminal."""
    return not sys.stdout.isatty()


class _WorkerField:
    """Adds ``worker`` to every record (a processor)."""

    def __init__(self, worker: int) -> None:
        self.worker = worker

    def __call__(self, logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        event.setdefault("worker", self.worker)
        return event


class UtcTimestamp:
    """Adds ``timestamp``, the time in ISO 8601 in UTC (``2026-11-24T17:46:32.794402Z``),
    as structlog's ``TimeStamper(fmt="iso", utc=True)`` writes it, with the part up
    to the second formatted once per second rather than for every line."""

    __slots__ = ("_second", "_prefix")

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self, logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        now = time.time_ns() // 1000  # microseconds
        second, micros = divmod(now, 1_000_000)
        if second != self._second:
            self._prefix = datetime.datetime.fromtimestamp(second, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
            self._second = second
        event["timestamp"] = f"{self._prefix}.{micros:06d}Z" if micros else self._prefix + "Z"
        return event


def format_exc_info_if_any(logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog's ``format_exc_info``, skipped for the lines that carry no exception (most)."""
    if "exc_info" in event:
        return structlog.processors.format_exc_info(logger, method, event)
    return event


def _json_text(value: Any, **kwargs: Any) -> str:
    return orjson.dumps(value, default=str).decode()
