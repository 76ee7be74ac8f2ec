"""The vertex adapter's plugin: the ``vertex`` channel type (see :mod:`.channel`)."""

from __future__ import annotations

from collections.abc import Callable

from gateway_core import ChannelType, hookimpl

from .channel import VertexChannel


@hookimpl
def register_channel_types(register: Callable[[ChannelType], None]) -> None:
    register(VertexChannel())
