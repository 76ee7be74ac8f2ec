"""The models an OpenAI (or OpenAI-compatible) upstream offers: ``GET {base}/v1/models``,
``{"object": "list", "data": [{"id": …, "object": "model", …}]}``, in one page (some
compatible servers, Together's, answer the bare list)."""

from __future__ import annotations

from gateway_core import ModelQuery
from gateway_core.upstream_models import entries, get_page

from .error_body import upstream_error_message

MODELS_PATH = "/v1/models"


async def list_models(query: ModelQuery) -> list[str]:
    headers = {"Authorization": f"Bearer {query.api_key}"} if query.api_key else {}
    page = await get_page(query, query.channel.base_url + MODELS_PATH, headers=headers, error_message=upstream_error_message)
    items = page if isinstance(page, list) else entries(page, "data")
    ids = [item.get("id") for item in items if isinstance(item, dict)]
    return [model for model in ids if isinstance(model, str)][: query.limits.models]
