"""The azure adapter's plugin: the ``azure`` channel type (see :mod:`.channel`)."""

from __future__ import annotations

from gateway_core import hookimpl

from .channel import AzureChannel


@hookimpl
def register_channel_types(register) -> None:
    register(AzureChannel())
