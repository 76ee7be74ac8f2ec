"""Calling Bedrock Runtime for a bedrock channel: its endpoint, its region, and one
signed POST (shared by Converse and InvokeModel).

Endpoint: the channel's base URL, in which ``{region}`` is replaced by the region
(``https://bedrock-runtime.{region}.amazonaws.com``, or a fixed one such as
``https://bedrock-runtime.eu-west-1.amazonaws.com`` or a loopback fake). Region:
the ``region`` setting, else the one a standard endpoint's host names, else
``us-east-1``. Auth: see :mod:`gateway_bedrock.auth`. Errors: see
:mod:`gateway_bedrock.errors`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from gateway_core import Exchange, Setting
from gateway_core.errors import GatewayError
from gateway_core.records import ChannelRecord
from gateway_core.upstream import post

from .auth import auth_headers
from .errors import upstream_error_message, with_advice
from .model_ids import model_path

DEFAULT_REGION = "us-east-1"
EVENT_STREAM = "application/vnd.amazon.eventstream"
REGION = Setting(
    "region", "str", default=None,
    help="the AWS region requests are signed for and {region} in the base URL stands for "
    "(default: the region of a bedrock-runtime.REGION.amazonaws.com base URL, else us-east-1)",
)  # fmt: skip


def region_of(channel: ChannelRecord) -> str:
    """The channel's region: its setting, else its endpoint's, else the default."""
    region = REGION.read(channel.settings)
    if isinstance(region, str) and region.strip():
        return region.strip()
    host = urlsplit(channel.base_url).hostname or ""
    labels = host.split(".")
    if len(labels) >= 4 and labels[0].startswith("bedrock-runtime") and labels[-2:] == ["amazonaws", "com"] and labels[1] != "{region}":
        return labels[1]
    return DEFAULT_REGION


def model_url(channel: ChannelRecord, model: str, action: str) -> str:
    """``{base}/model/{quoted model id}/{action}`` with the channel's region filled in."""
    return f"{channel.base_url.replace('{region}', region_of(channel))}/model/{model_path(model)}/{action}"


async def send(exchange: Exchange, url: str, body: bytes, *, stream: bool) -> aiohttp.ClientResponse:
    """POST ``body`` (JSON) to ``url`` (exactly as built, not re-quoted), signed or
    with the bearer key; the successful response, else Bedrock's error as the gateway's."""
    target = exchange.target
    headers = {"Content-Type": "application/json", "Accept": EVENT_STREAM if stream else "application/json"}
    headers.update(auth_headers(target.api_key, method="POST", url=url, region=region_of(target.channel), content_type=headers["Content-Type"], body=body))
    try:
        return await post(exchange, URL(url, encoded=True), headers=headers, body=body, error_message=upstream_error_message)
    except GatewayError as error:
        raise with_advice(error) from None
