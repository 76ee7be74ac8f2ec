"""Microsoft Entra ID bearer tokens for azure channels: the client-credentials grant.

A channel whose setting ``auth`` is ``entra_id`` holds its application's client secret
as its upstream key (sealed at rest like every key) and names its tenant and client id
in its settings. :class:`TokenCache` asks the token endpoint
(``{authority}/{tenant}/oauth2/v2.0/token``, a form with
``grant_type=client_credentials``, ``client_id``, ``client_secret`` and ``scope``) for
an access token, keeps it per channel and credentials, and asks again before it
expires: once the token has lived out half its lifetime, or is within five minutes of
its end, whichever comes first. Requests that need a token while one is being fetched
wait for that one fetch. Neither the secret nor a token is ever logged or put in an
error message.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import attrs
import orjson

from gateway_core import Timeouts, UpstreamError, UpstreamTimeoutError, UpstreamUnavailableError
from gateway_core.errors import excerpt
from gateway_core.upstream_tokens import FetchedToken, TokenCache as KeptTokens

REFRESH_MARGIN = 300.0  # seconds before its end a long-lived token is fetched again
MAX_ENTRIES = 1024  # tokens kept per process (a channel each, unless its secret changes)
ANSWER_LIMIT = 64 * 1024  # bytes of a token endpoint's answer read
LOOPBACK = frozenset(("127.0.0.1", "::1", "localhost"))
_DESCRIPTION_LIMIT = 300


@attrs.frozen
class Credentials:
    """What the client-credentials grant sends (``secret`` is the channel's key)."""

    authority: str
    tenant: str
    client_id: str
    secret: str = attrs.field(repr=False)
    scope: str

    @property
    def token_url(self) -> str:
        return f"{self.authority.rstrip('/')}/{quote(self.tenant, safe='')}/oauth2/v2.0/token"

    def key(self, channel_id: int) -> tuple[Any, ...]:
        """The cache key: the channel and its credentials (the secret as a hash)."""
        secret = hashlib.sha256(self.secret.encode("utf-8")).hexdigest()
        return (channel_id, self.authority, self.tenant, self.client_id, self.scope, secret)


def check_authority(authority: str) -> str | None:
    """Why ``authority`` may not receive a client secret (``None``: it may): it must
    be an ``https`` URL, or ``http`` on a loopback host (a local test endpoint)."""
    parts = urlsplit(authority)
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and parts.hostname in LOOPBACK:
        return None
    return f"the setting authority must be an https URL (http only on a loopback host), not {authority!r}"


class TokenCache:
    """Entra ID access tokens by channel and credentials (:mod:`gateway_core.upstream_tokens`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_entries: int = MAX_ENTRIES) -> None:
        self._clock = clock
        self._kept: KeptTokens[tuple[Any, ...]] = KeptTokens(clock, max_entries=max_entries, margin=REFRESH_MARGIN)

    @property
    def fetches(self) -> int:
        """Token requests sent (for tests and diagnostics)."""
        return self._kept.fetches

    def forget(self, channel_id: int, credentials: Credentials) -> None:
        """Drop the channel's token (the upstream refused it): the next call fetches one."""
        self._kept.forget(credentials.key(channel_id))

    async def token(self, channel_id: int, session: aiohttp.ClientSession, timeouts: Timeouts, credentials: Credentials) -> str:
        """A valid access token for the channel (a request's exchange or a model
        listing's query give the session and timeouts): the kept one until it is due
        for refresh, else a new one (one fetch shared by every caller)."""
        return await self._kept.token(credentials.key(channel_id), lambda: self._fetch(session, timeouts, credentials))

    async def _fetch(self, session: aiohttp.ClientSession, timeouts: Timeouts, credentials: Credentials) -> FetchedToken:
        form = {
            "grant_type": "client_credentials",
            "client_id": credentials.client_id,
            "client_secret": credentials.secret,
            "scope": credentials.scope,
        }
        try:
            async with asyncio.timeout(timeouts.connect + timeouts.first_byte):
                async with session.post(
                    credentials.token_url, data=form, allow_redirects=False,
                    headers={"Accept": "application/json"},
                    timeout=aiohttp.ClientTimeout(total=None, connect=timeouts.connect),
                ) as response:  # fmt: skip
                    status = response.status
                    data = await response.content.read(ANSWER_LIMIT)
        except TimeoutError:
            raise UpstreamTimeoutError("Microsoft Entra ID did not answer the token request in time", retryable=True) from None
        except aiohttp.ClientError as exc:
            raise UpstreamUnavailableError(f"could not reach Microsoft Entra ID for a token: {type(exc).__name__}", retryable=True) from None
        answer = _json(data)
        if status >= 400:
            raise _refused(status, answer, data)
        value, lifetime = answer.get("access_token"), _seconds(answer.get("expires_in"))
        if not isinstance(value, str) or not value or lifetime is None:
            error = UpstreamError("Microsoft Entra ID answered the token request without an access token and its lifetime", retryable=True)
            error.upstream_status = status
            raise error
        return FetchedToken(value, lifetime)


def _refused(status: int, answer: dict[str, Any], data: bytes) -> UpstreamError:
    code = answer.get("error")
    description = answer.get("error_description")
    first_line = description.strip().splitlines()[0] if isinstance(description, str) and description.strip() else ""
    if len(first_line) > _DESCRIPTION_LIMIT:
        first_line = first_line[:_DESCRIPTION_LIMIT].rstrip() + "…"
    said = ": ".join(str(part) for part in (code, first_line) if part) or f"HTTP {status}"
    error = UpstreamError(f"Microsoft Entra ID refused the channel's credentials ({status}): {said}", retryable=True)
    error.upstream_status = status
    error.upstream_body = excerpt(data)
    error.key_refused = code in ("invalid_client", "unauthorized_client")  # the client secret itself
    return error


def _json(data: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _seconds(value: Any) -> float | None:
    """``expires_in``: a number of seconds (v1.0 endpoints sent it as text)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None
