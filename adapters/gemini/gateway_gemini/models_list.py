"""Gemini's model list and model objects for ``GET /v1beta/models[/{model}]`` (pure).

A model is ``{"name": "models/<id>", "baseModelId", "version", "displayName",
"description", "supportedGenerationMethods", ...}``. The list pages with
``pageSize`` (default 50, at most 1000) and ``pageToken``: the token is the
url-safe base64 of the last id of the previous page, so pages stay stable while
models come and go.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from gateway_core.errors import InvalidRequestError, NotFoundError
from gateway_core.model import ModelInfo

from .wire import JSON

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
METHODS = ["generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"]


def model_to_wire(model: ModelInfo) -> JSON:
    return {
        "name": f"models/{model.id}",
        "baseModelId": model.id,
        "version": "001",
        "displayName": model.id,
        "description": f"{model.id}, served by relaygate",
        "supportedGenerationMethods": METHODS,
        **({"inputTokenLimit": model.input_token_limit} if model.input_token_limit else {}),
        **({"outputTokenLimit": model.output_token_limit} if model.output_token_limit else {}),
    }


def models_page(models: Sequence[ModelInfo], query: Mapping[str, str]) -> JSON:
    """One page of the model list, as ``models.list`` answers."""
    size = _page_size(query.get("pageSize") or query.get("page_size"))
    token = query.get("pageToken") or query.get("page_token")
    start = 0
    if token:
        after = _decode_token(token)
        start = next((i for i, m in enumerate(models) if m.id > after), len(models))
    page = models[start : start + size]
    body: JSON = {"models": [model_to_wire(m) for m in page]}
    if start + size < len(models) and page:
        body["nextPageToken"] = base64.urlsafe_b64encode(page[-1].id.encode()).decode().rstrip("=")
    return body


def model_get(models: Sequence[ModelInfo], model_id: str) -> JSON:
    """One model, as ``models.get`` answers; 404 when the key may not use it."""
    for model in models:
        if model.id == model_id:
            return model_to_wire(model)
    raise NotFoundError(f"models/{model_id} is not found for your API key, or is not supported.", code="model_not_found")


def _page_size(raw: Any) -> int:
    if raw in (None, ""):
        return DEFAULT_PAGE_SIZE
    try:
        size = int(raw)
    except ValueError:
        raise InvalidRequestError(f"Invalid value for 'pageSize': {raw!r} is not an integer.", param="pageSize") from None
    if size < 0:
        raise InvalidRequestError("Invalid value for 'pageSize': it must not be negative.", param="pageSize")
    return min(size, MAX_PAGE_SIZE) or DEFAULT_PAGE_SIZE


def _decode_token(token: str) -> str:
    try:
        return base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidRequestError("Invalid value for 'pageToken': it is not a token this server gave.", param="pageToken") from None
