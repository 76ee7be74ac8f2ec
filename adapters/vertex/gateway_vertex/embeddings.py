"""Embeddings on Vertex AI: ``:predict`` (pure, no I/O but for :func:`send_embeddings`).

Vertex's embedding models (``text-embedding-005``, ``text-multilingual-embedding-002``,
``gemini-embedding-001``) take ``POST …/publishers/google/models/{m}:predict`` with
``{"instances": [{"content": "…"}, …], "parameters": {"outputDimensionality": N}}`` and
answer ``{"predictions": [{"embeddings": {"values": [...], "statistics":
{"token_count": N, "truncated": false}}}, …]}``: one vector per instance, in order. The
core's :class:`EmbeddingsRequest` (an OpenAI client's ``/v1/embeddings``, a Gemini
client's ``embedContent`` / ``batchEmbedContents``) becomes one instance per text
(``dimensions`` → ``outputDimensionality``); usage is the sum of the reported token
counts. How many instances one request may carry is the model's limit (250 for
``text-embedding-005``, one for ``gemini-embedding-001``): Vertex refuses more with a
400 the client sees.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core import Exchange, JsonReply, UpstreamError
from gateway_core.errors import excerpt
from gateway_core.model import EmbeddingsRequest, EmbeddingsResponse, Usage
from gateway_core.upstream import parse_answer, post, read_all

MESSAGE_LIMIT = 500


def predict_body(request: EmbeddingsRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"instances": [{"content": text} for text in request.inputs]}
    if request.dimensions is not None:
        body["parameters"] = {"outputDimensionality": request.dimensions}
    return body


def embeddings_from_predictions(answer: Any, count: int) -> EmbeddingsResponse:
    """The core response of a ``:predict`` answer for ``count`` texts."""
    predictions = answer.get("predictions") if isinstance(answer, dict) else None
    if not isinstance(predictions, list) or len(predictions) != count:
        raise UpstreamError(f"Vertex answered the embeddings request without one prediction per text ({count} asked)")
    vectors, tokens = [], 0
    for prediction in predictions:
        embeddings = prediction.get("embeddings") if isinstance(prediction, dict) else None
        values = embeddings.get("values") if isinstance(embeddings, dict) else None
        if not isinstance(values, list):
            raise UpstreamError("Vertex answered an embedding without its values")
        vectors.append(tuple(float(v) for v in values))
        statistics = embeddings.get("statistics")
        counted = statistics.get("token_count") if isinstance(statistics, dict) else None
        tokens += int(counted) if isinstance(counted, (int, float)) and not isinstance(counted, bool) else 0
    return EmbeddingsResponse(model="", vectors=tuple(vectors), usage=Usage(input_tokens=tokens))


def google_error_message(status: int, body: bytes) -> str:
    """The message of Vertex's ``{"error": {"code", "message", "status"}}``; never raises."""
    try:
        error = orjson.loads(body).get("error")
        message = error.get("message") if isinstance(error, dict) else None
    except (orjson.JSONDecodeError, AttributeError):
        message = None
    text = message.strip() if isinstance(message, str) and message.strip() else " ".join(body.decode("utf-8", "replace").split())
    text = text or f"the upstream answered HTTP {status} without a message"
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT].rstrip() + "…"


async def send_embeddings(exchange: Exchange, url: str, headers: dict[str, str]) -> JsonReply:
    request = exchange.request
    if not isinstance(request, EmbeddingsRequest):
        raise UpstreamError("a vertex channel was handed an embeddings request it cannot read")
    response = await post(exchange, url, headers={**headers, "Content-Type": "application/json"}, body=orjson.dumps(predict_body(request)),
                          error_message=google_error_message)  # fmt: skip
    data = await read_all(response)
    try:
        converted = embeddings_from_predictions(parse_answer(data), len(request.inputs))
    except UpstreamError as error:
        error.upstream_body = excerpt(data)
        raise
    return JsonReply(body=None, response=converted, usage=converted.usage)
