"""``embedContent`` / ``batchEmbedContents`` bodies for a gemini channel (pure, no I/O).

From a Gemini client the body is forwarded as it is with the model mapped: the
URL's, the body's ``model`` and each batch request's ``model``
(``"models/<upstream>"``). From another protocol (an OpenAI client's
``/v1/embeddings``) the core :class:`EmbeddingsRequest` becomes one
``batchEmbedContents`` request per text (``dimensions`` → ``outputDimensionality``)
and the answer's ``embeddings[].values`` the core vectors, in order.
Usage is Google's ``usageMetadata.promptTokenCount`` when it reports one, else an
estimate of 4 characters a token over the texts embedded.

The other way, a Gemini client's embeddings on another channel type (an openai
channel): :func:`embed_request_from_wire` makes the core request — one input per
``Content`` (its text parts joined by a newline), ``outputDimensionality`` →
``dimensions``; ``taskType`` and ``title`` have no equivalent elsewhere and are
dropped; a content with no text is a 400 — and :func:`embed_response_to_wire`
writes the vectors back as ``embedContent`` (``embedding.values``) or
``batchEmbedContents`` (``embeddings[].values``) answer.
"""

from __future__ import annotations

from typing import Any

from gateway_core.model import EmbeddingsRequest, EmbeddingsResponse, Usage

from .response import usage_from_wire
from .wire import JSON, as_list, fail, field

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


def embed_usage(answer: Any, body: JSON) -> tuple[Usage, bool]:
    """What an embedding answer costs: the reported prompt tokens, else an estimate
    (four characters a token); and whether it is the estimate."""
    usage = usage_from_wire(field(answer, "usageMetadata")) if isinstance(answer, dict) else None
    if usage is not None and usage.input_tokens:
        return Usage(input_tokens=usage.input_tokens), False
    chars = sum(len(text) for text in _texts(body))
    return Usage(input_tokens=(chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN), True


def _texts(body: JSON) -> list[str]:
    contents = [field(r, "content") for r in as_list(body.get("requests"))] or [field(body, "content")]
    texts: list[str] = []
    for content in contents:
        for part in as_list(field(content, "parts")):
            text = field(part, "text")
            if isinstance(text, str):
                texts.append(text)
    return texts


def embed_request_from_wire(body: JSON, method: str, model: str) -> EmbeddingsRequest:
    """The core request of an ``embedContent`` / ``batchEmbedContents`` body, for another channel type."""
    requests = as_list(field(body, "requests")) if method == BATCH_EMBED_CONTENTS else [body]
    inputs: list[str] = []
    dimensions: int | None = None
    for n, request in enumerate(requests):
        where = f"requests[{n}].content" if method == BATCH_EMBED_CONTENTS else "content"
        content = field(request, "content") if isinstance(request, dict) else None
        texts = [t for part in as_list(field(content, "parts")) if isinstance(t := field(part, "text"), str)]
        if not texts:
            fail(f"'{where}' has no text: models/{model} is served by a channel that embeds text only.", where)
        inputs.append("\n".join(texts))
        size = field(request, "outputDimensionality")
        if type(size) is int and dimensions is None:
            dimensions = size
    if not inputs:
        fail("'requests' must hold at least one EmbedContentRequest.", "requests")
    return EmbeddingsRequest(model=model, inputs=tuple(inputs), dimensions=dimensions)


def embed_response_to_wire(response: EmbeddingsResponse, method: str) -> JSON:
    """The ``embedContent`` or ``batchEmbedContents`` answer of core vectors."""
    embeddings = [{"values": list(vector)} for vector in response.vectors]
    if method == BATCH_EMBED_CONTENTS:
        return {"embeddings": embeddings}
    return {"embedding": embeddings[0] if embeddings else {"values": []}}
