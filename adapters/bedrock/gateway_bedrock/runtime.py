"""Calling Bedrock Runtime for a bedrock channel: its endpoint, its region, and one
signed POST (shared by Converse and InvokeModel).

Endpoint: the channel's base URL, in which ``{region}`` is replaced by the region
(``https://bedrock-runtime.{region}.amazonaws.com``, or a fixed one such as
``https://bedrock-runtime.eu-west-1.amazonaws.com`` or a loopback fake). Region:
the ``region`` setting, else the one a standard endpoint's host names, else
``us-east-1``. Auth: see :mod:`gateway_bedrock.auth`, and
:mod:`gateway_bedrock.credentials` for a key naming AWS's credential chain. Errors: see
:mod:`gateway_bedrock.errors`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from gateway_core import Exchange, Setting, Timeouts
from gateway_core.errors import GatewayError
from gateway_core.records import ChannelRecord
from gateway_core.upstream import post

from .auth import auth_headers
from .credentials import ChainCredentials, chain_source
from .errors import upstream_error_message, with_advice
from .model_ids import model_path

DEFAULT_REGION = "us-east-1"
EVENT_STREAM = "application/vnd.amazon.eventstream"
REGION = Setting(
    "region", "str", default=None,
    help="the AWS region requests are signed for and {region} in the base URL stands for "
    "(default: the region of a bedrock-runtime.REGION.amazonaws.com base URL, else us-east-1)",
)  # fmt: skip


def text_setting(setting: Setting, channel: ChannelRecord) -> str | None:
    """A text setting of the channel without its spaces; ``None`` when not set or blank."""
    value = setting.read(channel.settings)
    return value.strip() or None if isinstance(value, str) else None


def region_of(channel: ChannelRecord) -> str:
    """The channel's region: its setting, else its endpoint's, else the default."""
    region = text_setting(REGION, channel)
    if region is not None:
        return region
    host = urlsplit(channel.base_url).hostname or ""
    labels = host.split(".")
    if len(labels) >= 4 and labels[0].startswith("bedrock-runtime") and labels[-2:] == ["amazonaws", "com"] and labels[1] != "{region}":
        return labels[1]
    return DEFAULT_REGION


def model_url(channel: ChannelRecord, model: str, action: str) -> str:
    """``{base}/model/{quoted model id}/{action}`` with the channel's region filled in."""
    return f"{channel.base_url.replace('{region}', region_of(channel))}/model/{model_path(model)}/{action}"


class Runtime:
    """Signed calls of one bedrock channel type, keeping what ``aws:`` keys resolve to."""

    def __init__(self) -> None:
        self.chain = ChainCredentials()

    async def resolved_key(self, channel_id: int, key: str, timeouts: Timeouts) -> str:
        """The key to sign with: the channel's own, or the credentials an ``aws:`` key
        resolves to (:mod:`gateway_bedrock.credentials`, kept until due for refresh)."""
        source = chain_source(key)
        if source is None:
            return key
        return await self.chain.key(channel_id, source, timeouts.connect + timeouts.first_byte)

    async def send(self, exchange: Exchange, url: str, body: bytes, *, stream: bool) -> aiohttp.ClientResponse:
        """POST ``body`` (JSON) to ``url`` (exactly as built, not re-quoted), signed or
        with the bearer key; the successful response, else Bedrock's error as the
        gateway's. Credentials from the chain that Bedrock refuses (403: expired,
        revoked) are resolved again once."""
        target = exchange.target
        source = chain_source(target.api_key)
        headers = {"Content-Type": "application/json", "Accept": EVENT_STREAM if stream else "application/json"}
        for last in (source is None, True):
            key = await self.resolved_key(target.channel.id, target.api_key, exchange.timeouts)
            region = region_of(target.channel)
            signed = headers | auth_headers(key, method="POST", url=url, region=region, content_type=headers["Content-Type"], body=body)
            try:
                return await post(exchange, URL(url, encoded=True), headers=signed, body=body, error_message=upstream_error_message)
            except GatewayError as error:
                if last or source is None or error.upstream_status != 403:
                    raise with_advice(error) from None
                self.chain.forget(target.channel.id, source, key)
        raise AssertionError("unreachable")
