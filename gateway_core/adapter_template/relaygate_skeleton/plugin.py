"""The plugin: what this package registers with the gateway at start-up.

Every ``relaygate`` command loads this module, and only a command that reads the
channel types runs the hook: the channel type is imported inside it, so loading
the plugin costs this module alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway_core import hookimpl

if TYPE_CHECKING:
    from gateway_core import ChannelType


@hookimpl
def register_channel_types(register: Callable[[ChannelType], None]) -> None:
    from .channel import SkeletonChannel

    register(SkeletonChannel())
