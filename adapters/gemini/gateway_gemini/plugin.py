"""The gemini adapter's plugin: the Gemini client protocol and the ``gemini`` channel type."""

from __future__ import annotations

from gateway_core import hookimpl

from .channel import GeminiChannel
from .protocol import GeminiProtocol


@hookimpl
def register_client_protocols(register, config) -> None:
    register(GeminiProtocol(limits=config.json_limits))


@hookimpl
def register_channel_types(register) -> None:
    register(GeminiChannel())
