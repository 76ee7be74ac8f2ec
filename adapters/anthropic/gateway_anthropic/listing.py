"""The models an Anthropic upstream offers: ``GET /v1/models?limit=1000``, then
``&after_id={last_id}`` while the page says ``has_more``. A page is
``{"data": [{"type": "model", "id": …, "display_name": …, "created_at": …}],
"has_more": …, "first_id": …, "last_id": …}``."""

from __future__ import annotations

from urllib.parse import quote

from gateway_core import ModelQuery
from gateway_core.upstream_models import Page, collect_pages, entries, get_page, not_a_model_list

from .error_body import upstream_error_message

MODELS_PATH = "/v1/models"
PAGE_SIZE = 1000  # the most Anthropic gives in a page


async def list_models(query: ModelQuery, headers: dict[str, str]) -> list[str]:
    """``headers``: the key and the ``anthropic-version`` the channel sends."""
    base = query.channel.base_url + MODELS_PATH + f"?limit={PAGE_SIZE}"

    async def fetch(after: str | None) -> Page:
        url = base if after is None else f"{base}&after_id={quote(after, safe='')}"
        page = await get_page(query, url, headers=headers, error_message=upstream_error_message)
        ids = [item["id"] for item in entries(page, "data") if isinstance(item, dict) and isinstance(item.get("id"), str)]
        more = page.get("has_more") is True
        last = page.get("last_id") or (ids[-1] if ids else None)
        if more and not isinstance(last, str):
            raise not_a_model_list(str(page)[:2000])  # more pages, but no cursor to ask for them
        return ids, (last if more else None)

    return await collect_pages(query, fetch)
