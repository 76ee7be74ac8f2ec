"""``embedContent`` / ``batchEmbedContents`` bodies for a gemini channel (pure, no I/O).

From a Gemini client the body is forwarded as it is with the model mapped: the
URL's, the body's ``model`` and each batch request's ``model``
(``"models/<upstream>"``). From another protocol (an OpenAI client's
``/v1/embeddings``) the core :class:`EmbeddingsRequest` becomes one
``batchEmbedContents`` request per text (``dimensions`` → ``outputDimensionality``)
and the answer's ``embeddings[].values`` the core vectors, in order.
Usage is Google's ``usageMetadata.promptTokenCount`` when it reports one, else an
estimate of 4 characters a token over the texts embedded.
"""

from __future__ import annotations

from typing import Any

from gateway_core.model import EmbeddingsRequest, EmbeddingsResponse, Usage

from .response import usage_from_wire
from .wire import JSON, as_list, field

EMBED_CONTENT = "embedContent"
BATCH_EMBED_CONTENTS = "batchEmbedContents"
CHARS_PER_TOKEN = 4


def passthrough_embed_body(body: JSON, upstream_model: str) -> JSON:
    """The client's body with every ``model`` it names mapped to the upstream's."""
    name = f"models/{upstream_model}"
    out = dict(body)
    if "model" in out:
        out["model"] = name
    requests = out.get("requests")
    if isinstance(requests, list):
        out["requests"] = [{**r, "model": name} if isinstance(r, dict) else r for r in requests]
    return out


def embed_body_to_wire(request: EmbeddingsRequest, upstream_model: str) -> JSON:
    """The ``batchEmbedContents`` body of a core embeddings request."""
    name = f"models/{upstream_model}"
    extra: JSON = {} if request.dimensions is None else {"outputDimensionality": request.dimensions}
    return {"requests": [{"model": name, "content": {"parts": [{"text": text}]}, **extra} for text in request.inputs]}


def embeddings_from_wire(answer: Any, usage: Usage) -> EmbeddingsResponse:
    """The core response of a ``batchEmbedContents`` answer."""
    vectors = []
    for embedding in as_list(field(answer, "embeddings")):
        values = field(embedding, "values")
        vectors.append(tuple(float(v) for v in values) if isinstance(values, list) else ())
    return EmbeddingsResponse(model="", vectors=tuple(vectors), usage=usage)


def embed_usage(answer: Any, body: JSON) -> Usage:
    """What an embedding answer costs: the reported prompt tokens, else an estimate."""
    usage = usage_from_wire(field(answer, "usageMetadata")) if isinstance(answer, dict) else None
    if usage is not None and usage.input_tokens:
        return Usage(input_tokens=usage.input_tokens)
    chars = sum(len(text) for text in _texts(body))
    return Usage(input_tokens=(chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


def _texts(body: JSON) -> list[str]:
    contents = [field(r, "content") for r in as_list(body.get("requests"))] or [field(body, "content")]
    texts: list[str] = []
    for content in contents:
        for part in as_list(field(content, "parts")):
            text = field(part, "text")
            if isinstance(text, str):
                texts.append(text)
    return texts
