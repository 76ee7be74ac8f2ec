"""The demo adapter's plugin: the ``demo`` channel type."""

from __future__ import annotations

from gateway_core import hookimpl

from .channel import DemoChannel


@hookimpl
def register_channel_types(register) -> None:
    register(DemoChannel())
