"""The ``fake`` client protocol: a real :class:`ClientProtocol` of the ``fake`` wire.

Routes: ``POST /fake/chat`` (a chat request of :mod:`.fake_wire`) and ``GET
/fake/models`` (``{"models": [ids]}``); the key is ``Authorization: Bearer``; an
error is ``{"error": {"kind", "message", "code", "request_id"}}`` with the error's
status. Rate limits go out as ``x-limit-{requests,tokens}`` and
``x-remaining-{requests,tokens}``. It lets the core's tests send requests with no
provider adapter installed; on a ``fake`` channel the body goes through as the
client sent it, the model mapped (the fast path).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .. import endpoints
from ..client_protocol import Call, ClientProtocol, Frame, Headers, Query, RenderedError, RouteSpec, StreamWriter, capped_output
from ..errors import GatewayError
from ..json_body import read_json_object
from ..key_header import bearer_key
from ..model import ChatResponse, CoreRequest, CoreResponse, ModelInfo
from ..ratelimit.state import RateLimitState
from ..sse import data_frame
from .fake_wire import END, WIRE, StreamEncoder, answer_to_wire, check_request, request_to_core

CHAT_PATH = "/fake/chat"
MODELS_PATH = "/fake/models"


class FakeProtocol(ClientProtocol):
    name = "fake"

    def routes(self) -> Sequence[RouteSpec]:
        return (RouteSpec(CHAT_PATH, endpoints.CHAT), RouteSpec(MODELS_PATH, endpoints.MODELS, methods=("GET",)))

    def read_key(self, headers: Headers, query: Query) -> str:
        return bearer_key(headers.get("authorization"))

    def claim(self, path: str, headers: Headers, query: Query) -> int:
        return 2 if path.startswith("/fake/") else 0

    def parse(self, route: RouteSpec, body: bytes, headers: Headers, query: Query, path_params: Mapping[str, str]) -> Call:
        if route.endpoint == endpoints.MODELS:
            return Call(protocol=self.name, endpoint=route.endpoint, wire="fake.models", model="", stream=False, body={})
        data = read_json_object(body)
        check_request(data)
        return Call(protocol=self.name, endpoint=route.endpoint, wire=WIRE, model=data["model"], stream=bool(data.get("stream")),
                    body=data, billing=capped_output(data.get("max_tokens")))  # fmt: skip

    def to_core(self, call: Call) -> CoreRequest:
        return request_to_core(call.body)

    def render_response(self, call: Call, response: CoreResponse) -> bytes:
        assert isinstance(response, ChatResponse)
        return orjson.dumps(answer_to_wire(response, call.model))

    def stream_writer(self, call: Call, passthrough: bool) -> StreamWriter:
        return FakeStreamWriter(passthrough)

    def render_models(self, call: Call, models: Sequence[ModelInfo], headers: Headers, query: Query) -> bytes:
        return orjson.dumps({"models": [model.id for model in models]})

    def render_error(self, error: GatewayError, request_id: str) -> RenderedError:
        return RenderedError(status=error.status, body=orjson.dumps({"error": error_body(error, request_id)}))

    def session_key(self, body: Mapping[str, Any]) -> str | None:
        value = body.get("session")
        return value if isinstance(value, str) and value else None

    def rate_limit_headers(self, state: RateLimitState) -> list[tuple[bytes, bytes]]:
        headers: list[tuple[bytes, bytes]] = []
        for allowance, suffix in ((state.requests, b"requests"), (state.tokens, b"tokens")):
            if allowance is not None:
                headers += [(b"x-limit-" + suffix, str(allowance.limit).encode()),
                            (b"x-remaining-" + suffix, str(allowance.remaining).encode())]  # fmt: skip
        return headers


def error_body(error: GatewayError, request_id: str) -> dict[str, Any]:
    return {"kind": error.kind, "message": error.message, "code": error.code, "request_id": request_id}


class FakeStreamWriter(StreamWriter):
    """The stream a client of the fake protocol reads: the upstream's events as they
    are on the fast path (its ``[END]`` held back until the request is recorded),
    the core events encoded otherwise."""

    def __init__(self, passthrough: bool) -> None:
        self.passthrough = passthrough
        self.encoder = StreamEncoder()

    def write(self, frame: Frame) -> bytes:
        if frame.terminal:
            return b""
        if self.passthrough or frame.wire == WIRE:
            return frame.raw
        return b"".join(self.encoder.encode(event) for event in frame.events)

    def end(self) -> bytes:
        return END

    def fail(self, error: GatewayError, request_id: str) -> bytes:
        return data_frame({"error": error_body(error, request_id)})
