"""The bedrock adapter's plugin: the ``bedrock`` channel type."""

from __future__ import annotations

from gateway_core import hookimpl


@hookimpl
def register_channel_types(register) -> None:
    from .channel import BedrockChannel  # here: loading the entry point (every relaygate command does) costs only this module

    register(BedrockChannel())
