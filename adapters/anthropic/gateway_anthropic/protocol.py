"""The Anthropic client protocol: the routes Anthropic-style clients call, in their shapes.

Routes: ``POST /v1/messages`` (plain and streaming), ``POST
/v1/messages/count_tokens``, and ``GET /v1/models`` for requests that carry
``anthropic-version`` or ``x-api-key`` (the OpenAI route serves the others). Query
strings such as ``?beta=true`` are accepted. The key comes from ``x-api-key``, else
from ``Authorization: Bearer``. ``anthropic-version`` and ``anthropic-beta`` are
kept in ``Call.options`` for an anthropic channel to pass on; ``max_tokens`` caps
what billing reserves (the call's :class:`~gateway_core.BillingHints`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from gateway_core import (
    AuthenticationError,
    Call,
    ChatRequest,
    ChatResponse,
    ClientProtocol,
    GatewayError,
    InvalidRequestError,
    LocalAnswer,
    NotFoundError,
    ModelInfo,
    RenderedError,
    RouteSpec,
    StreamWriter,
    capped_output,
    endpoints,
)
from gateway_core.json_body import DEFAULT_LIMITS, JsonLimits, read_json_object
from gateway_core.key_header import bearer_key, plain_key

from .error_body import error_status_and_body
from .messages_request import request_from_wire
from .messages_response import response_to_wire
from .stream_writers import ConvertedEvents, PassthroughEvents

if TYPE_CHECKING:
    from gateway_core import RateLimitState

MESSAGES_WIRE = "anthropic.messages"
COUNT_TOKENS_WIRE = "anthropic.count_tokens"
ESTIMATE_HEADER = "x-relaygate-token-count"
MAX_PAGE = 1000

log = structlog.get_logger("relaygate.anthropic")


def is_anthropic_request(headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
    """Whether a request on a shared path (``GET /v1/models``) comes from an Anthropic client."""
    return "anthropic-version" in headers or "x-api-key" in headers


class AnthropicProtocol(ClientProtocol):
    name = "anthropic"

    def __init__(self, limits: JsonLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def routes(self) -> Sequence[RouteSpec]:
        return (
            RouteSpec("/v1/messages", endpoints.CHAT),
            RouteSpec("/v1/messages/count_tokens", endpoints.COUNT_TOKENS),
            RouteSpec("/v1/models", endpoints.MODELS, methods=("GET",), match=is_anthropic_request),
            RouteSpec("/v1/models/{model:path}", endpoints.MODELS, methods=("GET",), match=is_anthropic_request),
        )

    def read_key(self, headers, query) -> str:
        api_key = headers.get("x-api-key")
        if api_key:
            return plain_key(api_key, "x-api-key")
        authorization = headers.get("authorization")
        if authorization is None:
            raise AuthenticationError(
                "No API key provided. Send it in the 'x-api-key' header (or as 'Authorization: Bearer <key>').",
                code="missing_api_key",
            )
        return bearer_key(authorization)

    def claim(self, path, headers, query) -> int:
        if "anthropic-version" in headers or "x-api-key" in headers or "/messages" in path:
            return 2  # above the OpenAI fallback
        return 0

    def parse(self, route, body, headers, query, path_params) -> Call:
        options = _options(headers, query)
        if route.endpoint == endpoints.MODELS:
            return Call(self.name, route.endpoint, "anthropic.models", "", False, {}, options, path_params=path_params)
        data = read_json_object(body, self.limits)
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise InvalidRequestError("model: Field required (a non-empty string).", param="model")
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise InvalidRequestError("messages: Field required (a non-empty array of messages).", param="messages")
        if route.endpoint == endpoints.COUNT_TOKENS:
            return Call(self.name, route.endpoint, COUNT_TOKENS_WIRE, model, False, data, options)
        stream = data.get("stream", False)
        if stream is not None and not isinstance(stream, bool):
            raise InvalidRequestError("stream: Input should be a valid boolean.", param="stream")
        billing = capped_output(data.get("max_tokens"))
        return Call(self.name, route.endpoint, MESSAGES_WIRE, model, bool(stream), data, options, billing=billing)

    def to_core(self, call: Call) -> ChatRequest:
        return request_from_wire(call.body)

    def render_response(self, call: Call, response: ChatResponse) -> bytes:
        if call.endpoint == endpoints.COUNT_TOKENS:  # counted by another protocol's channel: the count, as Anthropic answers it
            return orjson.dumps({"input_tokens": response.usage.input_tokens if response.usage else 0})
        return orjson.dumps(response_to_wire(response, call.model))

    def stream_writer(self, call: Call, passthrough: bool) -> StreamWriter:
        return PassthroughEvents() if passthrough else ConvertedEvents(call.model)

    def render_models(self, call: Call, models: Sequence[ModelInfo], headers, query) -> bytes:
        wanted = call.path_params.get("model")
        if wanted is not None:  # GET /v1/models/{model_id}: one model the key may use
            found = next((m for m in models if m.id == wanted), None)
            if found is None:
                raise NotFoundError(f"model: {wanted}", code="model_not_found")
            return orjson.dumps(model_object(found))
        return orjson.dumps(models_page(models, query))

    def render_error(self, error: GatewayError, request_id: str) -> RenderedError:
        status, body = error_status_and_body(error, request_id)
        headers = {"request-id": request_id} if request_id else {}
        return RenderedError(status=status, body=orjson.dumps(body), headers=headers)

    def rate_limit_headers(self, state: RateLimitState) -> list[tuple[bytes, bytes]]:
        return rate_limit_headers(state)

    async def answer_locally(self, call: Call) -> LocalAnswer | None:
        """``count_tokens`` for a model none of whose channels can count: counted here,
        with a local tokenizer, and marked as an estimate (header and log)."""
        if call.endpoint != endpoints.COUNT_TOKENS:
            return None
        from .token_count import count_input_tokens  # tiktoken loads only when first needed

        request = request_from_wire(call.body)
        count = await asyncio.to_thread(count_input_tokens, request)
        log.info("count_tokens estimated locally", model=call.model, encoding=count.encoding, input_tokens=count.input_tokens, exact=False)
        return LocalAnswer(
            body=orjson.dumps({"input_tokens": count.input_tokens}),
            headers={ESTIMATE_HEADER: f"estimate; encoding={count.encoding}"},
        )


def rate_limit_headers(state: RateLimitState) -> list[tuple[bytes, bytes]]:
    """Anthropic's ``anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`` headers
    (the reset as an RFC 3339 time)."""
    headers: list[tuple[bytes, bytes]] = []
    for allowance, name in ((state.requests, b"requests"), (state.tokens, b"tokens")):
        if allowance is not None:
            prefix = b"anthropic-ratelimit-" + name
            headers += [
                (prefix + b"-limit", str(allowance.limit).encode()),
                (prefix + b"-remaining", str(allowance.remaining).encode()),
                (prefix + b"-reset", rfc3339(state.reset_at(allowance)).encode()),
            ]
    return headers


def rfc3339(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def model_object(model: ModelInfo) -> dict[str, Any]:
    return {"type": "model", "id": model.id, "display_name": model.id, "created_at": rfc3339(model.created), "lifecycle": "active"}


def models_page(models: Sequence[ModelInfo], query: Mapping[str, str]) -> dict[str, Any]:
    """One page of Anthropic's model list (``limit``, ``after_id``, ``before_id``)."""
    raw_limit = query.get("limit") or "20"
    try:
        limit = int(raw_limit)
    except ValueError:
        raise InvalidRequestError(f"limit: Input should be a valid integer, not {raw_limit!r}.", param="limit") from None
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequestError(f"limit: must be between 1 and {MAX_PAGE}.", param="limit")
    ids = [m.id for m in models]
    after, before = query.get("after_id"), query.get("before_id")
    if after:
        start = ids.index(after) + 1 if after in ids else len(ids)
        page, has_more = models[start : start + limit], start + limit < len(models)
    elif before:
        end = ids.index(before) if before in ids else 0
        page, has_more = models[max(0, end - limit) : end], end - limit > 0
    else:
        page, has_more = models[:limit], len(models) > limit
    data = [model_object(m) for m in page]
    return {
        "data": data,
        "has_more": has_more,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


def _options(headers: Mapping[str, str], query: Mapping[str, str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for header, option in (("anthropic-version", "anthropic_version"), ("anthropic-beta", "anthropic_beta")):
        value = headers.get(header)
        if value:
            options[option] = value
    if query.get("beta"):
        options["beta"] = query["beta"]
    return options

