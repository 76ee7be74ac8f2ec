"""Tracing as a plugin: an observer of every app whose ``OTEL_*`` environment asks
for traces (``register_observers``). Loading it imports no OpenTelemetry: an app
imports the SDK when traces are asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway_core import hookimpl

if TYPE_CHECKING:
    from gateway_core.gateway import Gateway
    from gateway_core.hookspecs import RegisterObserver

    from .tracing import Tracing


def make_tracing(gateway: Gateway) -> Tracing | None:
    """The app's tracing as the environment configures it, or ``None`` (off)."""
    from .tracing import tracing_from_env

    return tracing_from_env()


@hookimpl
def register_observers(register: RegisterObserver) -> None:
    register(make_tracing)
