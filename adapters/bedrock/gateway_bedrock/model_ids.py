"""Bedrock model ids (pure).

Bedrock names a model by a base id (``anthropic.claude-sonnet-4-5-20250929-v1:0``,
``meta.llama3-3-70b-instruct-v1:0``, ``amazon.nova-pro-v1:0``), a cross-region
inference profile (the same with a geography first: ``us.``, ``eu.``, ``apac.``,
``global.`` …) or an ARN (a provisioned model, an inference profile, an imported
model). Any of them goes in the request path, quoted (:func:`model_path`).
:func:`provider_model` gives the model provider's own name where the id says it
(``claude-sonnet-4-5-20250929``), for the catalogue.
"""

from __future__ import annotations

import re
from urllib.parse import quote

GEOGRAPHIES = ("us-gov", "us", "eu", "apac", "jp", "au", "ca", "global")
VENDORS = ("anthropic", "meta", "amazon", "mistral", "cohere", "ai21", "deepseek", "openai", "qwen", "writer")
_VERSION = re.compile(r"-v\d+(?::\d+)?$")


def model_path(model: str) -> str:
    """The model as one quoted path segment (``:`` and ``/`` of an ARN included)."""
    return quote(model, safe="-._~")


def base_id(model: str) -> str:
    """The id without an ARN's prefix or a geography (``anthropic.claude-…-v1:0``)."""
    if model.startswith("arn:"):
        model = model.rsplit("/", 1)[-1]
    head, dot, rest = model.partition(".")
    if dot and head in GEOGRAPHIES:
        return rest
    return model


def provider_model(model: str) -> str:
    """The provider's own name of a Bedrock model (``us.anthropic.claude-haiku-4-5-20251001-v1:0``
    → ``claude-haiku-4-5-20251001``); the id itself when it names no vendor."""
    vendor, dot, rest = base_id(model).partition(".")
    if not dot or vendor not in VENDORS:
        return model
    return _VERSION.sub("", rest)


def is_claude(model: str) -> bool:
    """Whether the id names an Anthropic model (its extra fields are Anthropic's)."""
    base = base_id(model)
    return base.startswith("anthropic.") or "claude" in base


def claude_version(model: str) -> tuple[str, int, int] | None:
    """(family, major, minor) of a Claude id, or ``None``."""
    _, found, rest = provider_model(model).lower().partition("claude-")
    if not found:
        return None
    words = rest.replace(".", "-").split("-")
    family = next((w for w in words if w in ("opus", "sonnet", "haiku")), None)
    numbers = [int(w) for w in words if w.isdigit() and len(w) <= 2]
    if family is None or not numbers:
        return None
    return family, numbers[0], numbers[1] if len(numbers) > 1 else 0


def refuses_temperature_with_top_p(model: str) -> bool:
    """Claude 4.5 and later, and Opus 4.1, refuse ``temperature`` and ``top_p`` together."""
    version = claude_version(model)
    if version is None:
        return False
    family, major, minor = version
    return (major, minor) >= (4, 5) or (family == "opus" and (major, minor) >= (4, 1))
