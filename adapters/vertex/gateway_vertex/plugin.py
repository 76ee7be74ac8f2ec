"""The vertex adapter's plugin: the ``vertex`` channel type (see :mod:`.channel`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway_core import hookimpl

if TYPE_CHECKING:
    from gateway_core import ChannelType


@hookimpl
def register_channel_types(register: Callable[[ChannelType], None]) -> None:
    from .channel import VertexChannel  # here: loading the entry point (every relaygate command does) costs only this module

    register(VertexChannel())
