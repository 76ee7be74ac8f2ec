"""The gemini adapter's plugin: the Gemini client protocol and the ``gemini`` channel type."""

from __future__ import annotations

from gateway_core import hookimpl

# The protocol and the channel type are imported inside the hooks: loading this
# entry point (every ``relaygate`` command does) costs only this module.


@hookimpl
def register_client_protocols(register, config) -> None:
    from .protocol import GeminiProtocol

    register(GeminiProtocol(limits=config.json_limits))


@hookimpl
def register_channel_types(register) -> None:
    from .channel import GeminiChannel

    register(GeminiChannel())
