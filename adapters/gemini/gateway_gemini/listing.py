"""The models a Gemini upstream offers: ``GET /{version}/models?pageSize=1000``, then
``&pageToken={nextPageToken}`` while a page gives one. A page is ``{"models":
[{"name": "models/…", "supportedGenerationMethods": […], …}], "nextPageToken": …}``
(an empty list is left out). Ids lose their ``models/`` prefix, and only models
with a method the gateway calls are kept (generating, embedding): Imagen's
``predict`` or the Live API's ``bidiGenerateContent`` alone are not served here."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gateway_core import ModelQuery, UpstreamError
from gateway_core.errors import GatewayError
from gateway_core.upstream_models import Page, collect_pages, entries, get_page

from .error_body import channel_fault, upstream_error_message

PAGE_SIZE = 1000  # the most Gemini gives in a page
SERVED = frozenset(("generateContent", "streamGenerateContent", "embedContent", "batchEmbedContents"))


async def list_models(query: ModelQuery, version: str) -> list[str]:
    base = f"{query.channel.base_url}/{version}/models?pageSize={PAGE_SIZE}"
    headers = {"x-goog-api-key": query.api_key}

    async def fetch(token: str | None) -> Page:
        url = base if token is None else f"{base}&pageToken={quote(token, safe='')}"
        try:
            page = await get_page(query, url, headers=headers, error_message=upstream_error_message)
        except GatewayError as error:
            raise _key_refused(error) or error from None
        ids = [_model_id(item) for item in entries(page, "models", optional=True) if _served(item)]
        token = page.get("nextPageToken")
        return [model for model in ids if model], (token if isinstance(token, str) and token else None)

    return await collect_pages(query, fetch)


def _served(item: Any) -> bool:
    methods = item.get("supportedGenerationMethods") if isinstance(item, dict) else None
    return isinstance(methods, list) and not SERVED.isdisjoint(m for m in methods if isinstance(m, str))


def _model_id(item: dict[str, Any]) -> str | None:
    name = item.get("name")
    return name.removeprefix("models/") if isinstance(name, str) else None


def _key_refused(error: GatewayError) -> GatewayError | None:
    """Gemini answers a wrong key with a 400 ``API_KEY_INVALID``: the channel's key refused."""
    status, body = error.upstream_status, (error.upstream_body or "").encode()
    if status is None or status in (401, 403) and error.key_refused or not channel_fault(status, body):
        return None
    refused = UpstreamError(f"the upstream refused the channel's key ({status}): {upstream_error_message(status, body)}")
    refused.upstream_status, refused.upstream_body, refused.key_refused = status, error.upstream_body, True
    return refused
