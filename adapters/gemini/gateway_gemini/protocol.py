"""The Gemini client protocol: the routes Gemini-style clients call, in their shapes.

Routes, under both ``/v1beta`` (the Gemini command-line client) and ``/v1`` (the
default of the ``google-genai`` Python SDK 3.x): ``POST
models/{model}:generateContent``, ``:streamGenerateContent`` (``?alt=sse`` for
server-sent events, else one JSON array written as it goes), ``:countTokens``,
``:embedContent``, ``:batchEmbedContents``, ``GET models`` and ``GET
models/{model}``. ``{model}`` is one path segment: the model id, matched exactly.
``GET /v1/models`` is shared with the OpenAI protocol: requests carrying
``x-goog-api-key`` or ``?key=`` are answered here. The key comes from
``x-goog-api-key``, else ``?key=``, else ``Authorization: Bearer``. A
``generateContent`` call's ``generationConfig.maxOutputTokens`` caps what billing
reserves for it (its :class:`~gateway_core.BillingHints`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from gateway_core import (
    LocalAnswer,
    AuthenticationError,
    BillingHints,
    Call,
    ClientProtocol,
    CoreRequest,
    CoreResponse,
    EmbeddingsResponse,
    GatewayError,
    InvalidRequestError,
    ModelInfo,
    NotFoundError,
    RenderedError,
    RouteSpec,
    StreamWriter,
    capped_output,
    endpoints,
)
from gateway_core.json_body import DEFAULT_LIMITS, JsonLimits, read_json_object
from gateway_core.key_header import bearer_key, plain_key

from .count_tokens import count_request_from_wire, count_to_wire, estimate_input_tokens
from .embeddings import BATCH_EMBED_CONTENTS, EMBED_CONTENT, embed_request_from_wire, embed_response_to_wire
from .error_body import error_to_wire
from .models_list import model_get, models_page
from .request import request_from_wire
from .response import response_to_wire
from .stream_writers import ConvertedChunks, Framing, PassthroughChunks
from .wire import as_int, field

GENERATE_WIRE = "gemini.generate"
COUNT_TOKENS_WIRE = "gemini.count_tokens"
EMBED_WIRE = "gemini.embeddings"
MODELS_WIRE = "gemini.models"
VERSIONS = ("/v1beta", "/v1")
METHODS = {
    "generateContent": endpoints.CHAT,
    "streamGenerateContent": endpoints.CHAT,
    "countTokens": endpoints.COUNT_TOKENS,
    EMBED_CONTENT: endpoints.EMBEDDINGS,
    BATCH_EMBED_CONTENTS: endpoints.EMBEDDINGS,
}
ESTIMATE_HEADER = "x-relaygate-token-count"


def is_gemini_request(headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
    """Whether a request on a shared path (``GET /v1/models``) comes from a Gemini client."""
    return "x-goog-api-key" in headers or "key" in query


class GeminiProtocol(ClientProtocol):
    name = "gemini"

    def __init__(self, limits: JsonLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def routes(self) -> Sequence[RouteSpec]:
        out: list[RouteSpec] = []
        for version in VERSIONS:
            match = is_gemini_request if version == "/v1" else None
            # the ``:method`` routes first: ``models/{model}`` would match them too
            out.extend(RouteSpec(f"{version}/models/{{model}}:{method}", endpoint) for method, endpoint in METHODS.items())
            out.append(RouteSpec(f"{version}/models/{{model:path}}", endpoints.MODELS, ("GET",), match))
            # a POST here names a method this gateway does not serve (``:predict`` …):
            # answered 404 by ``parse``, as Google does, rather than 405
            out.append(RouteSpec(f"{version}/models/{{model:path}}", endpoints.MODELS, ("POST",), match))
            out.append(RouteSpec(f"{version}/models", endpoints.MODELS, ("GET",), match))
        return out

    def read_key(self, headers, query) -> str:
        value = headers.get("x-goog-api-key")
        if value is not None:
            return plain_key(value, "x-goog-api-key")
        value = query.get("key")
        if value is not None:
            return plain_key(value, "key")
        authorization = headers.get("authorization")
        if authorization is None:
            raise AuthenticationError(
                "No API key provided. Send it in the 'x-goog-api-key' header "
                "(or as '?key=<key>', or 'Authorization: Bearer <key>').",
                code="missing_api_key",
            )
        return bearer_key(authorization)

    def claim(self, path, headers, query) -> int:
        if is_gemini_request(headers, query) or path.startswith("/v1beta/") or path == "/v1beta":
            return 3
        last = path.rsplit("/", 1)[-1]
        return 3 if "/models/" in path and ":" in last else 0

    def parse(self, route, body, headers, query, path_params) -> Call:
        model = path_params.get("model", "")
        if route.match is not None and not route.match(headers, query):
            # the only route of its path, so dispatched here anyway: not a Gemini client's
            # request (an OpenAI client's ``GET /v1/models/{id}``), and no such path for it
            raise NotFoundError(f"Unknown path: {route.path.replace('{model:path}', model).replace('{model}', model)}.", code="unknown_path")
        if route.endpoint == endpoints.MODELS and route.methods == ("POST",):
            name, _, method = model.rpartition(":")
            served = ", ".join(f":{m}" for m in METHODS)
            raise NotFoundError(
                f"The method '{method}' of models/{name} is not served here (this gateway serves {served})."
                if name else f"Unknown path: POST models/{model}. Name a method: models/{{model}}:generateContent.",
                code="unknown_path",
            )
        if route.endpoint == endpoints.MODELS:
            return Call(self.name, route.endpoint, MODELS_WIRE, "", False, {}, path_params=path_params)
        method = route.path.rsplit(":", 1)[1]
        if not model:
            raise InvalidRequestError("The path must name a model: models/{model}:" + method, param="model")
        data = read_json_object(body, self.limits)
        options: dict[str, Any] = {"method": method}
        if route.endpoint == endpoints.CHAT:
            contents = field(data, "contents")
            if not isinstance(contents, (list, dict)) or not contents:
                raise InvalidRequestError("'contents' is required: a non-empty array of Content objects.", param="contents")
            stream = method == "streamGenerateContent"
            options["sse"] = query.get("alt") == "sse"
            config = field(data, "generationConfig")
            options["thoughts"] = field(field(config, "thinkingConfig"), "includeThoughts") is True
            return Call(
                self.name, route.endpoint, GENERATE_WIRE, model, stream, data, options, path_params, billing=billing_hints(config)
            )
        if route.endpoint == endpoints.COUNT_TOKENS:
            return Call(self.name, route.endpoint, COUNT_TOKENS_WIRE, model, False, data, options, path_params)
        _check_embed_body(data, method)
        return Call(self.name, route.endpoint, EMBED_WIRE, model, False, data, options, path_params)

    def to_core(self, call: Call) -> CoreRequest:
        if call.endpoint == endpoints.CHAT:
            if as_int(field(field(call.body, "generationConfig"), "candidateCount")) > 1:
                raise InvalidRequestError(
                    f"candidateCount above 1 is not available for {call.model}: only Gemini upstreams answer "
                    "with several candidates.",
                    param="generationConfig.candidateCount",
                )
            return request_from_wire(call.body, call.model, stream=call.stream)
        if call.endpoint == endpoints.COUNT_TOKENS:
            return count_request_from_wire(call.body, call.model)
        return embed_request_from_wire(call.body, str(call.options.get("method")), call.model)

    def render_response(self, call: Call, response: CoreResponse) -> bytes:
        if isinstance(response, EmbeddingsResponse):
            return orjson.dumps(embed_response_to_wire(response, str(call.options.get("method"))))
        if call.endpoint == endpoints.COUNT_TOKENS:
            return orjson.dumps(count_to_wire(response.usage.input_tokens if response.usage else 0))
        return orjson.dumps(response_to_wire(response, call.model, thoughts=bool(call.options.get("thoughts"))))

    def stream_writer(self, call: Call, passthrough: bool) -> StreamWriter:
        framing = Framing(bool(call.options.get("sse")))
        if passthrough:
            return PassthroughChunks(framing)
        return ConvertedChunks(call.model, framing, thoughts=bool(call.options.get("thoughts")))

    def render_models(self, call: Call, models: Sequence[ModelInfo], headers, query) -> bytes:
        model_id = call.path_params.get("model")
        if model_id:
            return orjson.dumps(model_get(models, model_id))
        return orjson.dumps(models_page(models, query))

    def render_error(self, error: GatewayError, request_id: str) -> RenderedError:
        return RenderedError(status=error.status, body=orjson.dumps(error_to_wire(error, request_id)))

    async def answer_locally(self, call: Call) -> LocalAnswer | None:
        """``countTokens`` for a model none of whose channels can count: estimated here
        (4 characters a token, 258 an image) and said to be an estimate in a header."""
        if call.endpoint != endpoints.COUNT_TOKENS:
            return None
        count = estimate_input_tokens(count_request_from_wire(call.body, call.model))
        return LocalAnswer(body=orjson.dumps(count_to_wire(count)), headers={ESTIMATE_HEADER: "estimate; chars/4"})


def billing_hints(config: Any) -> BillingHints:
    """What billing reads of a ``generationConfig``: its ``maxOutputTokens`` (an
    int64, which Google's JSON may write as a string)."""
    return capped_output(as_int(field(config, "maxOutputTokens")))


def _check_embed_body(data: dict[str, Any], method: str) -> None:
    if method == EMBED_CONTENT:
        if not isinstance(field(data, "content"), dict):
            raise InvalidRequestError("'content' is required: the Content object to embed.", param="content")
        return
    requests = data.get("requests")
    if not isinstance(requests, list) or not requests or not all(isinstance(r, dict) for r in requests):
        raise InvalidRequestError("'requests' is required: a non-empty array of EmbedContentRequest objects.", param="requests")
