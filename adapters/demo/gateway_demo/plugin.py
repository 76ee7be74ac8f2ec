"""The demo adapter's plugin: the ``demo`` channel type."""

from __future__ import annotations

from gateway_core import hookimpl


@hookimpl
def register_channel_types(register) -> None:
    from .channel import DemoChannel  # here: loading the entry point (every relaygate command does) costs only this module

    register(DemoChannel())
