"""The openai adapter's plugin: the OpenAI client protocol and the ``openai`` channel type."""

from __future__ import annotations

from gateway_core import hookimpl

from .channel import OpenAIChannel
from .protocol import OpenAIProtocol


@hookimpl
def register_client_protocols(register) -> None:
    register(OpenAIProtocol())


@hookimpl
def register_channel_types(register) -> None:
    register(OpenAIChannel())
