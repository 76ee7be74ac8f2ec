"""AWS's credential chain for a bedrock channel, through botocore (the optional extra
``relaygate-bedrock[aws]``), as an alternative to credentials in the channel's key.

A channel key asks for it:

- ``aws:chain``: botocore's default chain, as the AWS CLI and SDKs resolve it: the
  environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``),
  web identity (``AWS_WEB_IDENTITY_TOKEN_FILE`` with ``AWS_ROLE_ARN``), the shared
  ``credentials`` and ``config`` files (``AWS_PROFILE`` or ``default``, roles assumed
  from them), then container and instance metadata.
- ``aws:profile=NAME``: the profile ``NAME`` of the shared files (static keys, a role
  to assume, web identity, SSO …).

botocore is imported only when a channel uses one of these, and is blocking: every
resolution runs in a thread (:func:`asyncio.to_thread`), never on the event loop.
What it resolves is kept per channel and key with the core's
:class:`gateway_core.upstream_tokens.TokenCache` (one resolution for every waiting
request) and resolved again before it expires: temporary credentials at half their
life or five minutes before their end, static ones every :data:`STATIC_LIFETIME`
seconds (a rotated file or a changed environment is read again). Credentials are
never logged nor put in a message: an error names the profile and what botocore
said of it.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import attrs

from gateway_core import UpstreamError, UpstreamTimeoutError
from gateway_core.upstream_tokens import FetchedToken, TokenCache

PREFIX = "aws:"
STATIC_LIFETIME = 900.0  # seconds static credentials (environment, a file) are kept before they are read again
_REASON_LIMIT = 300


@attrs.frozen
class ChainSource:
    """Where a channel's credentials come from: a named profile, or the default chain (``None``)."""

    profile: str | None

    @property
    def name(self) -> str:
        return f"the AWS profile {self.profile!r}" if self.profile else "the AWS credential chain"


def chain_source(key: str) -> ChainSource | None:
    """The source a channel key names (``aws:chain``, ``aws:profile=NAME``), or ``None``
    for a key that holds credentials or is an API key."""
    text = key.strip()
    if not text.startswith(PREFIX):
        return None
    rest = text[len(PREFIX) :]
    if rest == "chain":
        return ChainSource(None)
    name, equals, profile = rest.partition("=")
    if name == "profile" and equals and profile.strip():
        return ChainSource(profile.strip())
    raise UpstreamError("a bedrock channel key starting with 'aws:' is aws:chain or aws:profile=NAME", retryable=True)


class ChainCredentials:
    """Credentials resolved by botocore, kept per channel and source."""

    def __init__(self) -> None:
        self._kept: TokenCache[tuple[int, ChainSource]] = TokenCache()

    @property
    def fetches(self) -> int:
        """Resolutions started (for tests and diagnostics)."""
        return self._kept.fetches

    async def key(self, channel_id: int, source: ChainSource, timeout: float) -> str:
        """The resolved credentials as a channel key (``ID:SECRET[:TOKEN]``)."""
        return await self._kept.token((channel_id, source), lambda: self._fetch(source, timeout))

    def forget(self, channel_id: int, source: ChainSource, key: str) -> None:
        """Drop the kept credentials if they are still ``key`` (Bedrock refused them)."""
        self._kept.forget((channel_id, source), key)

    async def _fetch(self, source: ChainSource, timeout: float) -> FetchedToken:
        try:
            async with asyncio.timeout(timeout):
                key, expiry = await asyncio.to_thread(_resolve, source)
        except TimeoutError:
            raise UpstreamTimeoutError(f"{source.name} did not resolve within {timeout:g} s", retryable=True) from None
        lifetime = STATIC_LIFETIME if expiry is None else (expiry - dt.datetime.now(dt.timezone.utc)).total_seconds()
        if lifetime <= 0:
            raise UpstreamError(f"{source.name} gave credentials that have already expired", retryable=True)
        return FetchedToken(key, lifetime)


def _resolve(source: ChainSource) -> tuple[str, dt.datetime | None]:
    """Blocking: the credentials botocore resolves for ``source`` and when they expire
    (``None``: static). Runs in a thread."""
    try:
        import botocore.exceptions
        import botocore.session
    except ImportError:
        raise UpstreamError("a bedrock channel with an aws: key needs botocore: pip install 'relaygate-bedrock[aws]'", retryable=True) from None
    try:
        resolved = botocore.session.Session(profile=source.profile).get_credentials()
        frozen = resolved.get_frozen_credentials() if resolved is not None else None
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        raise UpstreamError(f"{source.name} could not be resolved: {_reason(exc)}", retryable=True) from None
    if frozen is None or not frozen.access_key or not frozen.secret_key:
        raise UpstreamError(f"{source.name} found no credentials (environment, shared files, web identity, metadata)", retryable=True)
    parts = [frozen.access_key, frozen.secret_key] + ([frozen.token] if frozen.token else [])
    if any(":" in part for part in parts):
        raise UpstreamError(f"{source.name} gave credentials that are not AWS access keys", retryable=True)
    expiry = getattr(resolved, "_expiry_time", None)  # RefreshableCredentials' end (temporary credentials); static ones have none
    return ":".join(parts), expiry if isinstance(expiry, dt.datetime) and expiry.tzinfo is not None else None


def _reason(exc: Exception) -> str:
    """The first line of what botocore said (it names profiles and files, never a secret)."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= _REASON_LIMIT else line[:_REASON_LIMIT].rstrip() + "…"
