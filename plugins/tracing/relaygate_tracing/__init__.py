"""Relaygate's OpenTelemetry traces, a first-party plugin (:mod:`.plugin`): a span
per request and a child span per upstream attempt (:mod:`.tracing`), on when the
standard ``OTEL_*`` environment asks for traces. See docs/operations.md.

Importing the package imports nothing else (every ``relaygate`` command loads the
plugin): :class:`Tracing` and :func:`tracing_requested` are imported when first
read, the OpenTelemetry SDK when traces are asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway_core import lazy

if TYPE_CHECKING:
    from .tracing import Tracing, tracing_requested

if not TYPE_CHECKING:  # mypy reads the imports above
    __getattr__ = lazy.loader(__name__, {"Tracing": ".tracing", "tracing_requested": ".tracing"})

__all__ = ["Tracing", "tracing_requested"]
