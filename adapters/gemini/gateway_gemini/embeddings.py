"""``embedContent`` / ``batchEmbedContents`` bodies for a gemini channel (pure, no I/O).

The core has no embeddings model yet, so embeddings go only from a Gemini client to
a gemini channel, forwarded as they are with the model mapped: the URL's, the
body's ``model`` and each batch request's ``model`` (``"models/<upstream>"``).
Usage is Google's ``usageMetadata.promptTokenCount`` when it reports one, else an
estimate of 4 characters a token over the texts embedded.
"""

from __future__ import annotations

from typing import Any

from gateway_core.model import Usage

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
