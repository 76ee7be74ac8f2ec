"""OpenAI embeddings bodies ⇄ the core embeddings model (pure, no I/O).

On the fast path (an ``openai`` channel) the body goes as it is, ``encoding_format``
included: the upstream answers in the encoding the client asked for (the Python
SDK asks ``base64`` by default and decodes it itself). Through conversion (a
``gemini`` channel), the texts become an :class:`EmbeddingsRequest`, and the
vectors come back as floats, or as ``base64`` (little-endian float32, OpenAI's
encoding) when the client asked for it. Token-id inputs have no neutral form:
only OpenAI channels embed them.

Usage: the upstream's ``usage.prompt_tokens``; an answer without usage is
counted at 4 characters a token over the texts (1 token per token id).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from typing import Any

from gateway_core.errors import InvalidRequestError
from gateway_core.model import EmbeddingsRequest, EmbeddingsResponse, Usage
from gateway_core.tally import estimate_tokens

JSON = dict[str, Any]
_FIELDS = ("model", "input", "dimensions", "user", "encoding_format")


def request_from_wire(body: JSON) -> EmbeddingsRequest:
    """The core request of an embeddings body whose input is text."""
    items = body.get("input")
    texts = [items] if isinstance(items, str) else items
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise InvalidRequestError(
            f"Token-id input can be embedded only by OpenAI channels, and '{body.get('model')}' is served "
            "by a channel of another kind: send the input as text.",
            param="input",
        )
    dimensions = body.get("dimensions")
    user = body.get("user")
    return EmbeddingsRequest(
        model=str(body.get("model")),
        inputs=tuple(texts),
        dimensions=dimensions if type(dimensions) is int else None,
        user=user if isinstance(user, str) else None,
        extra={k: v for k, v in body.items() if k not in _FIELDS},
    )


def response_to_wire(response: EmbeddingsResponse, model: str, encoding_format: str) -> JSON:
    """An embeddings list object, vectors as floats or base64."""
    encode = encode_base64 if encoding_format == "base64" else list
    usage = response.usage or Usage()
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": n, "embedding": encode(v)} for n, v in enumerate(response.vectors)],
        "model": model,
        "usage": {"prompt_tokens": usage.input_tokens, "total_tokens": usage.input_tokens},
    }


def encode_base64(vector: Sequence[float]) -> str:
    """OpenAI's base64 encoding of a vector: little-endian float32."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def decode_base64(data: str) -> list[float]:
    raw = base64.b64decode(data)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def usage_from_wire(answer: Any, body: JSON) -> Usage:
    """The reported prompt tokens, else an estimate over the input."""
    usage = answer.get("usage") if isinstance(answer, dict) else None
    if isinstance(usage, dict) and type(usage.get("prompt_tokens")) is int and usage["prompt_tokens"] >= 0:
        return Usage(input_tokens=usage["prompt_tokens"])
    return Usage(input_tokens=estimated_tokens(body.get("input")))


def estimated_tokens(items: Any) -> int:
    if isinstance(items, str):
        return estimate_tokens(len(items))
    if isinstance(items, list):
        return sum(1 if type(i) is int else estimated_tokens(i) for i in items)
    return 0
