"""The contract a channel-type adapter implements.

A channel type talks to one kind of upstream. The relay hands it an
:class:`Exchange` (what to send, where, with which key) and gets back either a
:class:`JsonReply` or a :class:`StreamReply`. HTTP channel types use the helpers
in :mod:`gateway_core.upstream` for the wire work (timeouts, error mapping, SSE
framing); a local channel type (the demo) answers by itself.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

import attrs

from .channel_settings import Setting
from .client_protocol import Call, Frame
from .errors import GatewayError, NotFoundError
from .model import CoreRequest, CoreResponse, MediaUsage, Usage
from .records import ChannelRecord
from .sessions import UpstreamSession
from .base.timeouts import Timeouts as Timeouts  # part of this contract; its own module so the configuration loads without the rest

if TYPE_CHECKING:
    import aiohttp

NO_HEADERS: Mapping[str, str] = MappingProxyType({})


@attrs.frozen
class AnswerLimits:
    """Bytes an upstream may send: a whole non-streaming answer, one frame of a
    stream (a bigger one is a 502, see :mod:`gateway_core.upstream`)."""

    answer_bytes: int = 32 * 1024 * 1024
    frame_bytes: int = 32 * 1024 * 1024


@attrs.frozen
class Target:
    """Where one attempt goes: the channel, the upstream key chosen, the mapped model."""

    channel: ChannelRecord
    api_key: str = attrs.field(repr=False)
    upstream_model: str


@attrs.frozen
class Exchange:
    """Everything a channel type needs for one attempt.

    ``request`` is the core request when the call must be converted, ``None`` on
    the fast path (the channel speaks ``call.wire``): then build the upstream body
    from ``call.body`` with only the model and the gateway's own fields changed.
    """

    call: Call
    target: Target
    request: CoreRequest | None
    session: aiohttp.ClientSession
    timeouts: Timeouts
    request_id: str
    # W3C trace context to send upstream (only when the channel forwards it), added by upstream.post
    trace_headers: Mapping[str, str] = attrs.field(default=NO_HEADERS)
    limits: AnswerLimits = AnswerLimits()

    @property
    def passthrough(self) -> bool:
        return self.request is None


@attrs.frozen
class JsonReply:
    """A complete answer. On the fast path ``body`` is the upstream's bytes and
    ``response`` may be ``None``; on the conversion path ``response`` is set.

    ``wire`` names the wire of ``body`` when the channel answered in the client's
    own wire although asked to convert (see :attr:`Frame.wire`): the body is then
    sent as on the fast path. ``media`` is what the call used that is priced per
    unit (images, characters, audio), for billing. ``estimated``: the channel
    computed ``usage`` itself (the upstream reported none); the usage row says so.
    """

    body: bytes | None
    response: CoreResponse | None
    usage: Usage | None
    model: str | None = None
    content_type: str = "application/json"
    wire: str | None = None
    media: MediaUsage | None = None
    estimated: bool = False  # ``usage`` is the channel's own estimate, not the upstream's report


@attrs.frozen
class ListingLimits:
    """What the gateway reads of an upstream's model list: bytes of one page, pages
    (a list with more stops there and says so), model ids in all."""

    page_bytes: int = 8 * 1024 * 1024
    pages: int = 20
    models: int = 10_000


@attrs.frozen
class ModelQuery:
    """Everything a channel type needs to list the models its upstream offers:
    the channel (its base URL, headers and settings), one of its upstream keys
    (unsealed for the call), the channel's timeouts, the shared HTTP session and
    the bounds of what is read. :mod:`gateway_core.upstream_models` does the HTTP
    work with these."""

    channel: ChannelRecord
    api_key: str = attrs.field(repr=False)
    session: aiohttp.ClientSession
    timeouts: Timeouts
    request_id: str
    limits: ListingLimits = ListingLimits()


class ModelsNotListed(GatewayError):
    """The channel type cannot list its upstream's models (the default of
    :meth:`ChannelType.list_models`): a plain answer, not a failure of the upstream."""

    status = 501
    kind = "not_supported"


@attrs.define
class StreamReply:
    """A streaming answer: frames as the upstream sends them, and a way to stop it."""

    frames: AsyncIterator[Frame]
    close: Callable[[], Awaitable[None]]


Reply = JsonReply | StreamReply


class ChannelType(abc.ABC):
    """A kind of upstream the gateway can call.

    ``settings`` declares the per-channel settings the type reads (see
    :mod:`gateway_core.channel_settings`): the admin layer validates a channel's
    settings against it, and the type reads each with :meth:`Setting.read`. A class
    attribute usually; an instance may set its own (a default from ``plugins.toml``).
    """

    name: str
    settings: tuple[Setting, ...] = ()
    #: whether a channel of this type needs an upstream key: one without any is
    #: shown as ``no_key`` (needing a key) by every front. ``False`` for types
    #: that call nothing keyed (the demo type).
    needs_key: bool = True

    @abc.abstractmethod
    def wire(self, endpoint: str) -> str | None:
        """The wire format this type speaks for ``endpoint``, or ``None`` when it
        does not serve it."""

    def model_wire(self, endpoint: str, channel: ChannelRecord, upstream_model: str) -> str | None:
        """The wire format this type speaks for ``endpoint`` on ``channel`` when it
        calls ``upstream_model``: the relay takes the fast path (the client's body,
        unconverted) when it is the client's own. Default: :meth:`wire`. A type whose
        upstream speaks another wire per model (a cloud serving several providers' models)
        overrides it; :meth:`wire` still says whether the type serves the endpoint."""
        return self.wire(endpoint)

    @abc.abstractmethod
    async def send(self, exchange: Exchange) -> Reply:
        """Perform one attempt. Raise a ``GatewayError`` (usually through
        :mod:`gateway_core.upstream`) when the upstream fails."""

    def normalize_base_url(self, base_url: str) -> str:
        """The base URL as stored; the default drops a trailing slash."""
        return base_url.rstrip("/")

    async def open_session(self, exchange: Exchange) -> UpstreamSession:
        """Open a two-way session with the upstream (a WebSocket endpoint, see
        :mod:`gateway_core.sessions`) with the target's key; raise a ``GatewayError``
        when it cannot be opened. Default: the type serves no session endpoint."""
        raise NotFoundError(f"The endpoint '{exchange.call.endpoint}' is not available on this channel.")

    async def list_models(self, query: ModelQuery) -> list[str]:
        """The ids of the models the upstream offers that this type can serve, as a
        client would name them (an operator puts them in the channel's ``models``),
        in the upstream's order. Raise a ``GatewayError`` (usually through
        :mod:`gateway_core.upstream_models`) when the upstream fails. Default: the
        type cannot list its models (:class:`ModelsNotListed`)."""
        raise ModelsNotListed(f"the channel type {self.name!r} cannot list its upstream's models")
