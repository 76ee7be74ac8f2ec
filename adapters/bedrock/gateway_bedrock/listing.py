"""The models a bedrock channel can call, for ``relaygate channel models NAME --fetch``:
Bedrock's control plane (``bedrock.{region}.amazonaws.com``, signed for the service
``bedrock`` like the runtime), not the runtime the channel calls.

- ``GET /foundation-models?byOutputModality=TEXT``: ``modelSummaries[]``, one
  request (the list has no pages). A model is listed when it answers text and can be
  called on demand by its base id (``inferenceTypesSupported`` holds ``ON_DEMAND``).
- ``GET /inference-profiles?maxResults=1000``, following ``nextToken``:
  ``inferenceProfileSummaries[]``, the cross-region profiles (``us.…``, ``eu.…``,
  ``global.…``) that are ``ACTIVE`` and route to a text model of the first list
  (Claude 4.5 and other recent models are called through them only).

The control plane's URL is the setting ``control_url``, else the base URL with its
``bedrock-runtime`` host label as ``bedrock`` (``https://bedrock-runtime.{region}.amazonaws.com``
→ ``https://bedrock.{region}.amazonaws.com``, ``bedrock-runtime-fips`` → ``bedrock-fips``),
else the base URL as it is (a proxy or a loopback fake serving both).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from gateway_core import ModelQuery, Setting
from gateway_core.records import ChannelRecord
from gateway_core.upstream_models import Page, collect_pages, entries, get_page

from .errors import upstream_error_message
from .model_ids import base_id
from .runtime import text_setting

RUNTIME_LABEL = "bedrock-runtime"
PROFILES_PAGE = 1000
CONTROL_URL = Setting(
    "control_url", "str", default=None,
    help="Bedrock's control plane, where the models are listed (default: the base URL with bedrock-runtime as bedrock; "
    "{region} stands for the region)",
)  # fmt: skip


def control_url(channel: ChannelRecord) -> str:
    """Where the channel's foundation models are listed (``{region}`` not yet filled in)."""
    own = text_setting(CONTROL_URL, channel)
    if own is not None:
        return own.rstrip("/")
    split = urlsplit(channel.base_url)
    label, dot, rest = split.netloc.partition(".")
    if dot and label.startswith(RUNTIME_LABEL):
        return urlunsplit(split._replace(netloc="bedrock" + label[len(RUNTIME_LABEL) :] + dot + rest))
    return channel.base_url


async def list_models(query: ModelQuery, base: str, sign: Any) -> list[str]:
    """The ids the channel can call: ``base`` is the control plane's URL (region filled
    in), ``sign(url)`` the headers that authenticate a GET of ``url``."""

    async def get(url: str) -> Any:
        return await get_page(query, url, headers=sign(url), error_message=upstream_error_message)

    summaries = entries(await get(f"{base}/foundation-models?byOutputModality=TEXT"), "modelSummaries")
    text = {item["modelId"]: item for item in summaries if _is(item, "outputModalities", "TEXT") and isinstance(item.get("modelId"), str)}

    async def fetch(token: str | None) -> Page:
        url = f"{base}/inference-profiles?maxResults={PROFILES_PAGE}"
        page = await get(url if token is None else f"{url}&nextToken={quote(token, safe='-_.~')}")
        ids = [item["inferenceProfileId"] for item in entries(page, "inferenceProfileSummaries", optional=True)
               if isinstance(item, dict) and isinstance(item.get("inferenceProfileId"), str) and item.get("status", "ACTIVE") == "ACTIVE"
               and base_id(item["inferenceProfileId"]) in text]  # fmt: skip
        token = page.get("nextToken")
        return ids, token if isinstance(token, str) and token else None

    on_demand = [model for model, item in text.items() if _is(item, "inferenceTypesSupported", "ON_DEMAND")]
    return on_demand + await collect_pages(query, fetch)


def _is(item: Any, field: str, value: str) -> bool:
    values = item.get(field) if isinstance(item, dict) else None
    return isinstance(values, list) and value in values
