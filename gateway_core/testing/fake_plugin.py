"""The test kit's plugin: the ``fake`` client protocol and channel type.

Pass this module to ``extra_plugins`` (``create_app``, :class:`~gateway_core.testing.Seed`,
:class:`~gateway_core.testing.GatewayThread`), or return it from the
``relaygate_plugins`` fixture, and a test has a provider to call and a protocol to
call it with, with no adapter installed: ``seed.channel("c", type="fake",
base_url=upstream.url, ...)`` with a :class:`~gateway_core.testing.FakeChat`
upstream, and a :class:`~gateway_core.testing.FakeClient` for the client.
"""

from __future__ import annotations

from collections.abc import Callable

from ..channel_type import ChannelType
from ..client_protocol import ClientProtocol
from ..hookspecs import hookimpl


@hookimpl
def register_client_protocols(register: Callable[[ClientProtocol], None]) -> None:
    from .fake_protocol import FakeProtocol

    register(FakeProtocol())


@hookimpl
def register_channel_types(register: Callable[[ChannelType], None]) -> None:
    from .fake_channel import FakeChannel

    register(FakeChannel())
