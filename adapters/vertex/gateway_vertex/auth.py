"""OAuth2 access tokens for vertex channels, through google-auth.

A channel's credentials are either a service account (its JSON key file's content, as it
is or base64-encoded, is the channel's upstream key, sealed at rest like every key): google-auth signs a JWT
assertion with the account's private key and posts it to the key file's ``token_uri``
(``https://oauth2.googleapis.com/token``) for a token with the ``cloud-platform``
scope; or, with the setting ``credentials=default``, the environment's application
default credentials (``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's, the metadata
server). google-auth is blocking, so every refresh runs in a thread
(:func:`asyncio.to_thread`), never on the event loop.

:class:`TokenCache` keeps one token per channel and credentials and refreshes it
before it expires: once it has lived half its life, or within five minutes of its end,
whichever comes first. Requests that need a token while one is being fetched wait for
that one fetch. Neither the key nor a token is ever logged or put in a message.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import functools
import hashlib
import time
from collections.abc import Callable
from typing import Any

import attrs
import orjson

from gateway_core import Exchange, UpstreamError, UpstreamTimeoutError, UpstreamUnavailableError
from gateway_core.upstream_tokens import FetchedToken, TokenCache as KeptTokens

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
REFRESH_MARGIN = 300.0  # seconds before its end a long-lived token is fetched again
MAX_ENTRIES = 1024  # tokens kept per process
_REASON_LIMIT = 300


@attrs.frozen
class Source:
    """Where a channel's tokens come from: a service account's key (``info``, the
    parsed JSON) or the environment's default credentials (``info`` is ``None``)."""

    info: dict[str, Any] | None = attrs.field(repr=False, eq=False)
    digest: str  # the key as a hash: the cache key

    @property
    def account(self) -> str:
        return str((self.info or {}).get("client_email") or "the default credentials")


@functools.lru_cache(maxsize=256)
def service_account(key: str) -> Source:
    """The source for a channel key holding a service account's JSON key file, as it
    is or base64-encoded (one line without commas, as ``relaygate channel add
    --api-key`` takes a key: ``$(base64 -w0 key.json)``); a clear error (never quoting
    the key) when it is not one."""
    text = key.strip()
    if not text.startswith("{"):
        try:
            text = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_" if ("-" in text or "_" in text) else None, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            text = ""
    try:
        info = orjson.loads(text)
    except orjson.JSONDecodeError:
        info = None
    if not isinstance(info, dict) or info.get("type") != "service_account" or not all(info.get(k) for k in ("client_email", "private_key", "token_uri")):
        raise UpstreamError(
            "the vertex channel's key is not a service account's JSON key (type service_account with client_email, private_key and token_uri); "
            "set the whole key file, or its base64 ($(base64 -w0 key.json)), as the channel's key, or --setting credentials=default",
            retryable=True,
        )  # fmt: skip
    return Source(info=info, digest=hashlib.sha256(key.encode("utf-8")).hexdigest())


DEFAULT = Source(info=None, digest="default")


class TokenCache:
    """Access tokens by channel and source (:mod:`gateway_core.upstream_tokens`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_entries: int = MAX_ENTRIES) -> None:
        self._clock = clock
        self._kept: KeptTokens[tuple[int, str]] = KeptTokens(clock, max_entries=max_entries, margin=REFRESH_MARGIN)

    @property
    def fetches(self) -> int:
        """Token requests made (for tests and diagnostics)."""
        return self._kept.fetches

    def forget(self, channel_id: int, source: Source, token: str) -> None:
        """Drop the channel's token if it is still ``token`` (the upstream refused it)."""
        self._kept.forget((channel_id, source.digest), token)

    async def token(self, exchange: Exchange, source: Source) -> str:
        """A valid access token for the exchange's channel: the kept one until it is
        due for refresh, else a new one (one fetch shared by every caller)."""
        return await self._kept.token((exchange.target.channel.id, source.digest), lambda: self._fetch(exchange, source))

    async def _fetch(self, exchange: Exchange, source: Source) -> FetchedToken:
        timeouts = exchange.timeouts
        limit = timeouts.connect + timeouts.first_byte
        try:
            async with asyncio.timeout(limit):
                value, expiry = await asyncio.to_thread(_refresh, source, limit)
        except TimeoutError:
            raise UpstreamTimeoutError("Google's token endpoint did not answer in time", retryable=True) from None
        lifetime = 3600.0 if expiry is None else (expiry - dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)).total_seconds()
        if lifetime <= 0:
            raise UpstreamError("Google's token endpoint answered with a token that has already expired", retryable=True)
        return FetchedToken(value, lifetime)


def _refresh(source: Source, timeout: float) -> tuple[str, dt.datetime | None]:
    """Blocking: new credentials from ``source``, refreshed; their token and expiry
    (naive UTC, as google-auth keeps it). Runs in a thread."""
    import google.auth
    import google.auth.exceptions
    import google.auth.transport.requests
    from google.oauth2 import service_account as accounts

    transport = google.auth.transport.requests.Request()

    def request(url: str, method: str = "GET", body: Any = None, headers: Any = None, **kwargs: Any) -> Any:
        kwargs["timeout"] = timeout  # google-auth's own default is two minutes
        return transport(url, method=method, body=body, headers=headers, **kwargs)

    try:
        if source.info is None:
            credentials, _ = google.auth.default(scopes=[SCOPE])
        else:
            credentials = accounts.Credentials.from_service_account_info(source.info, scopes=[SCOPE])
        credentials.refresh(request)
    except google.auth.exceptions.TransportError as exc:
        raise UpstreamUnavailableError(f"could not reach Google's token endpoint for {source.account}: {type(exc).__name__}", retryable=True) from None
    except (google.auth.exceptions.GoogleAuthError, ValueError) as exc:
        error = UpstreamError(f"Google refused the credentials of {source.account}: {_reason(exc)}", retryable=True)
        # the account itself refused (a deleted key, a wrong signature), not a passing failure of the endpoint
        error.key_refused = source.info is not None and isinstance(exc, google.auth.exceptions.RefreshError) and not getattr(exc, "retryable", False)
        raise error from None
    token = credentials.token
    if not isinstance(token, str) or not token:
        raise UpstreamError(f"Google's token endpoint answered {source.account} without an access token", retryable=True)
    return token, credentials.expiry


def _reason(exc: Exception) -> str:
    """The first line of what google-auth said (its message names the endpoint's
    ``error`` and ``error_description``, never the key or the assertion)."""
    args = getattr(exc, "args", ())
    text = str(args[0]) if args else type(exc).__name__
    line = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return line if len(line) <= _REASON_LIMIT else line[:_REASON_LIMIT].rstrip() + "…"
