"""The plugin: what this package registers with the gateway at start-up."""

from __future__ import annotations

from collections.abc import Callable

from gateway_core import ChannelType, hookimpl

from .channel import SkeletonChannel


@hookimpl
def register_channel_types(register: Callable[[ChannelType], None]) -> None:
    register(SkeletonChannel())
