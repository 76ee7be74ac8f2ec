"""The bedrock adapter's plugin: the ``bedrock`` channel type."""

from __future__ import annotations

from gateway_core import hookimpl

from .channel import BedrockChannel


@hookimpl
def register_channel_types(register) -> None:
    register(BedrockChannel())
