"""The contract a client-protocol adapter implements.

A client protocol owns a set of routes, knows where its clients put their key,
parses request bodies into a :class:`Call`, converts calls to the core model when
the channel speaks another wire format, and renders responses, stream frames and
errors in its own shape. Every method is synchronous and pure except where noted:
the relay does the I/O.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from .errors import GatewayError
from .model import CoreRequest, CoreResponse, MediaUsage, ModelInfo, StreamEvent
from .ratelimit.state import RateLimitState
from .records import ChannelRecord, KeyRecord
from .kept_responses import ResponseStore
from .uploads import Upload

Headers = Mapping[str, str]  # lower-case names (Starlette's Headers fits)
Query = Mapping[str, str]


@attrs.frozen
class RouteSpec:
    """One route a client protocol serves.

    ``endpoint`` names what the route does (see :mod:`gateway_core.endpoints`).
    Several protocols may claim the same path and method (``GET /v1/models``);
    ``match`` then tells whether a request is theirs, by its headers and query.
    A route with no ``match`` is the fallback for its path.

    ``stream_body`` routes (file uploads) are not read whole: the relay hands an
    :class:`~gateway_core.uploads.Upload` to :meth:`ClientProtocol.parse_upload`,
    which reads only the head it needs, and the channel streams the rest to the
    upstream. ``max_body_bytes`` overrides ``[gateway] max_body_bytes`` for the
    route (413 beyond it).

    ``websocket`` routes are WebSocket sessions relayed to a channel's upstream
    message by message (:mod:`gateway_core.request.session_relay`): the protocol reads the
    key from the handshake and parses a call from its query (``body`` is empty).
    A ``websocket`` route with ``frames_for`` instead runs each client message as
    one request of the protocol's ``POST`` route at that path
    (:mod:`gateway_core.request.frame_relay`, the protocol's
    :meth:`ClientProtocol.frame_conversation`): the whole request path per message.
    """

    path: str
    endpoint: str
    methods: tuple[str, ...] = ("POST",)
    match: Callable[[Headers, Query], bool] | None = None
    stream_body: bool = False
    max_body_bytes: int | None = None
    websocket: bool = False
    frames_for: str | None = None


@attrs.frozen
class BillingHints:
    """What a call tells billing before it is sent, in the core's terms: set by
    the protocol's ``parse`` from its own wire fields (the core reads none),
    read by the reservation (:mod:`gateway_core.policies.quota`) and the charge
    (:mod:`gateway_core.billing.charge`).

    ``max_output_tokens`` is the client's cap on output tokens (``None``: it set
    none, and ``[gateway] default_max_output_tokens`` is reserved); for a request
    of images, the most one image is billed (0: images priced apiece only). ``media`` is
    what the request says it will use of units priced apiece (the images it asks
    for, the characters it speaks, the audio length estimated from an upload's
    size): reserved, and charged when the answer reports nothing better and
    reached the client. ``price_variants`` names prices more specific than the
    model's, tried first (``"dall-e-3:1024x1792:hd"``, then ``"dall-e-3:1024x1792"``).
    """

    max_output_tokens: int | None = None
    media: MediaUsage | None = None
    price_variants: tuple[str, ...] = ()


NO_HINTS = BillingHints()


def capped_output(*values: object) -> BillingHints:
    """The billing hints of a call whose only hint is its cap on output tokens:
    the first of ``values`` (the wire's cap fields, in order of precedence) that
    is a positive integer; :data:`NO_HINTS` when none is."""
    for value in values:
        if type(value) is int and value > 0:
            return BillingHints(max_output_tokens=value)
    return NO_HINTS


@attrs.frozen
class Call:
    """One parsed client request.

    ``wire`` names the body's wire format (``"acme.chat"``): when a channel
    speaks the same wire for the endpoint, the relay forwards ``body`` with only
    the model mapped (the fast path) and never builds the core request.
    ``options`` holds what the protocol needs to remember for its own rendering
    (for example whether the client asked for usage in its stream); ``billing``
    what billing needs to know before the call is sent (:class:`BillingHints`).
    ``upload`` is the body still to stream of a ``stream_body`` route (``body``
    then holds the form fields read from its head). ``channel_id`` pins the call
    to one channel (the one holding state the call names, set by
    :meth:`ClientProtocol.prepare`); ``None``: any channel that serves it.
    """

    protocol: str
    endpoint: str
    wire: str
    model: str
    stream: bool
    body: dict[str, Any]
    options: Mapping[str, Any] = attrs.field(factory=dict)
    path_params: Mapping[str, str] = attrs.field(factory=dict)
    upload: Upload | None = None
    billing: BillingHints = NO_HINTS
    channel_id: int | None = None


@attrs.define
class Frame:
    """One upstream stream frame: its exact bytes and the core events it carries.

    Made for every upstream chunk: slotted, not frozen (cheaper to make; see the
    stream events in :mod:`gateway_core.model`), and not to be changed once made.

    ``wire`` names the wire format of ``raw`` when a channel answered in the
    client's own wire although the relay asked it to convert (a channel that
    decides per channel record whether it speaks a wire natively): a writer may
    then forward ``raw`` as on the fast path.
    """

    raw: bytes
    events: tuple[StreamEvent, ...] = ()
    terminal: bool = False  # the upstream's end-of-stream marker (e.g. ``data: [DONE]``)
    wire: str | None = None


@attrs.frozen
class LocalAnswer:
    """An answer a protocol gives by itself (see :meth:`ClientProtocol.answer_locally`)."""

    body: bytes
    headers: Mapping[str, str] = attrs.field(factory=dict)
    estimated: bool = True  # the answer is computed locally, not by the model's upstream
    content_type: str = "application/json"


@attrs.frozen
class Caller:
    """What a protocol's stateful steps (:meth:`ClientProtocol.prepare`,
    :meth:`ClientProtocol.keep`) see of a request: its API key (owner, group),
    the store of kept answers, and the channel that answered (in ``keep``)."""

    key: KeyRecord
    responses: ResponseStore
    channel: ChannelRecord | None = None


@attrs.frozen
class RenderedError:
    status: int
    body: bytes
    headers: Mapping[str, str] = attrs.field(factory=dict)
    content_type: str = "application/json"


class StreamWriter(abc.ABC):
    """Turns upstream frames into the bytes a streaming client receives.

    Created per request by :meth:`ClientProtocol.stream_writer`. In pass-through
    mode ``write`` returns the frame's own bytes (or a filtered form); in
    conversion mode it encodes the frame's core events. The terminal bytes come
    from ``end`` only after the request is settled, so a client that saw the end
    of its stream is always billed and logged.
    """

    content_type: str = "text/event-stream"

    @abc.abstractmethod
    def write(self, frame: Frame) -> bytes:
        """Bytes to send now for this frame (may be empty)."""

    @abc.abstractmethod
    def end(self) -> bytes:
        """The closing bytes of a stream that ended normally."""

    @abc.abstractmethod
    def fail(self, error: GatewayError, request_id: str) -> bytes:
        """The closing bytes of a stream broken after it started."""

    def keepalive(self) -> bytes:
        """Bytes that keep an idle stream open without changing its meaning."""
        return b": keep-alive\n\n"


class FrameConversation(abc.ABC):
    """A protocol's side of one WebSocket connection of a ``frames_for`` route
    (:class:`RouteSpec`), created per connection by
    :meth:`ClientProtocol.frame_conversation`; it may remember what earlier
    requests of the connection answered (bounded). The core runs one request at a
    time, in the order the messages came."""

    @abc.abstractmethod
    def request(self, text: str) -> bytes | Sequence[str] | None:
        """A client message: the body of the request to run for it (``bytes``),
        messages to answer at once (a sequence), or ``None`` to ignore it. Raise a
        ``GatewayError`` to answer with :meth:`error` instead."""

    @abc.abstractmethod
    def event(self, data: bytes) -> str | None:
        """One event (an SSE frame's data) of the running request's streamed
        answer: the message to send for it (``None``: none)."""

    @abc.abstractmethod
    def error(self, status: int, body: bytes, request_id: str) -> str:
        """The message for a request answered with an error status (``body`` as
        :meth:`ClientProtocol.render_error` wrote it), or for a refused message
        (then rendered by the core)."""

    def answer(self, body: bytes) -> Sequence[str]:
        """The messages for a request answered in one piece with 200 (not streamed).
        Default: the body as one message."""
        return (body.decode("utf-8", "replace"),)

    def finished(self) -> None:
        """The running request is over (whichever way). Default: nothing."""


class ClientProtocol(abc.ABC):
    """A wire protocol spoken by the gateway's clients."""

    name: str

    @abc.abstractmethod
    def routes(self) -> Sequence[RouteSpec]:
        """The routes this protocol serves."""

    @abc.abstractmethod
    def read_key(self, headers: Headers, query: Query) -> str:
        """The API key secret of a request, or raise ``AuthenticationError``
        saying what is wrong with the header (never echoing the secret)."""

    def claim(self, path: str, headers: Headers, query: Query) -> int:
        """How surely a request for an unknown ``path`` comes from this protocol's
        clients (0: not at all). The highest claim renders the 404."""
        return 0

    @abc.abstractmethod
    def parse(
        self,
        route: RouteSpec,
        body: bytes,
        headers: Headers,
        query: Query,
        path_params: Mapping[str, str],
    ) -> Call:
        """Parse a request body, or raise ``InvalidRequestError``; the call's
        :class:`BillingHints` carry what billing reads from the body."""

    async def parse_upload(
        self,
        route: RouteSpec,
        upload: Upload,
        headers: Headers,
        query: Query,
        path_params: Mapping[str, str],
    ) -> Call:
        """Parse a request of a ``stream_body`` route from the head of its body
        (see :class:`~gateway_core.uploads.Upload`); the returned call keeps the
        upload in ``Call.upload`` for the channel to stream. Default: read the
        whole (size-limited) body and :meth:`parse` it."""
        body = await upload.read_all()
        return self.parse(route, body, headers, query, path_params)

    @abc.abstractmethod
    def to_core(self, call: Call) -> CoreRequest:
        """The call as a core request, for channels of another wire format."""

    @abc.abstractmethod
    def render_response(self, call: Call, response: CoreResponse) -> bytes:
        """A complete (non-streaming) response body."""

    @abc.abstractmethod
    def stream_writer(self, call: Call, passthrough: bool) -> StreamWriter:
        """A writer for one streaming response."""

    @abc.abstractmethod
    def render_models(self, call: Call, models: Sequence[ModelInfo], headers: Headers, query: Query) -> bytes:
        """The body of a ``models`` endpoint: the key's ``models`` (or the one the
        call's path names, from ``call.path_params``)."""

    @abc.abstractmethod
    def render_error(self, error: GatewayError, request_id: str) -> RenderedError:
        """Status, headers and body for an error, in this protocol's shape."""

    async def answer_locally(self, call: Call) -> LocalAnswer | None:
        """An answer for a call no channel of its model serves at its endpoint
        (counting tokens for a model on a channel type that cannot), or ``None``
        to refuse the call as usual (404, endpoint not available)."""
        return None

    async def prepare(self, call: Call, caller: Caller) -> Call | LocalAnswer:
        """The call to route, once the policies admitted it: a protocol that keeps
        state for its clients (answers they build on by id) fills it in here, or
        answers by itself (a kept answer read or deleted); raise a
        ``GatewayError`` to refuse. Default: the call as it is."""
        return call

    async def keep(self, call: Call, caller: Caller, answer: bytes | StreamWriter, native: bool) -> None:
        """Keep what the protocol needs of a successful answer before the client
        has (the end of) it: ``answer`` is the body to send
        (a complete answer) or the stream's writer, ``native`` whether the channel
        answered in the call's own wire. Must not raise for a store failure (the
        answer stands). Default: nothing."""
        return None

    def session_subprotocol(self, offered: Sequence[str]) -> str | None:
        """The WebSocket subprotocol to accept among those a session's client
        offered (``None``: none). Default: none."""
        return None

    def session_error(self, error: GatewayError, request_id: str) -> str:
        """The message telling a session's client why the session ends (sent before
        the close). Default: the error's body, as :meth:`render_error` writes it."""
        return self.render_error(error, request_id).body.decode("utf-8", "replace")

    def frame_conversation(self, route: RouteSpec) -> FrameConversation:
        """A new connection of a ``frames_for`` route (:class:`FrameConversation`).
        Default: none (a protocol with such a route overrides it)."""
        raise NotImplementedError(f"{self.name} declares the frames route {route.path} but no frame conversation")

    def session_key(self, body: Mapping[str, Any]) -> str | None:
        """The session a request's body names in this protocol's fields (a
        conversation, a cache key or an end user), for session affinity
        (``[gateway] session_affinity``): requests of one session go to the
        channel and upstream key that served it last. Called only when affinity
        is on and the configured ``session_header`` names none; the core hashes
        and cuts the value. Must not raise on a body of unexpected shape.
        Default: ``None`` (no session)."""
        return None

    def passthrough_body(self, call: Call, upstream_body: bytes) -> bytes:
        """The client's body of a same-wire non-streaming answer (as is, by default)."""
        return upstream_body

    def rate_limit_headers(self, state: RateLimitState) -> list[tuple[bytes, bytes]]:
        """Response headers telling the client its rate limits, in this protocol's names.

        Called by the rate-limit policy for every request of a key or user that
        has limits (never when there are none), on success and on a 429 alike;
        the relay adds the headers to the response, streamed or not. Names are
        lower-case bytes. ``state`` holds, per dimension (requests, tokens,
        concurrency), the tightest :class:`~gateway_core.ratelimit.Allowance`
        or ``None``; ``state.reset_at(allowance)`` gives a Unix time for
        protocols that send times of day. ``Retry-After`` on a 429 is added by
        the relay from the error. Default: no headers.
        """
        return []
