"""The demo adapter's plugin: the ``demo`` channel type."""

from __future__ import annotations

from gateway_core import hookimpl

# Channel types of this plugin that need no upstream key (DemoChannel.needs_key), said
# here so that listing a keyless channel (`relaygate channel list`) need not import them.
KEYLESS_CHANNEL_TYPES = ("demo",)


@hookimpl
def register_channel_types(register) -> None:
    from .channel import DemoChannel  # here: loading the entry point (every relaygate command does) costs only this module

    register(DemoChannel())
