"""The OpenID Connect relying party: the provider's discovery document and keys,
the authorization request (code flow with PKCE, S256), the code exchange and the
ID token's checks. The protocol's parts are Authlib's (request and token
parameters, PKCE) and joserfc's (JWS signatures, JWK sets, claims); the HTTP
goes through the gateway's shared aiohttp session, so nothing blocks the loop.

The discovery document is read once and kept; the key set is kept too and read
again when a token names a key it lacks (the provider rotated its keys), at
most once every :data:`KEYS_REFRESH_SECONDS`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import attrs
import orjson
from authlib.common.security import generate_token
from authlib.common.urls import add_params_to_uri
from authlib.oauth2.auth import ClientAuth
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from .settings import SsoSettings

KEYS_REFRESH_SECONDS = 10.0  # a token naming an unknown key reads the key set again at most this often
LEEWAY_SECONDS = 60  # clock skew allowed on exp, iat and nbf
TIMEOUT = aiohttp.ClientTimeout(total=10)
MAX_DOCUMENT_BYTES = 1_000_000


class SignOnFailed(Exception):
    """The provider's answer or token is refused, or the provider cannot be reached
    (``unreachable``); the message says why (no secret in it)."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


@attrs.frozen
class Flow:
    """One sign-in under way: what the callback must find again (kept sealed in a cookie)."""

    state: str
    nonce: str
    verifier: str = attrs.field(repr=False)
    next: str = ""

    @classmethod
    def new(cls, next_path: str = "") -> Flow:
        return cls(generate_token(32), generate_token(32), generate_token(64), next_path)


class OpenIdProvider:
    def __init__(self, settings: SsoSettings, http: aiohttp.ClientSession) -> None:
        self.settings = settings
        self.http = http
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._keys_read_at = 0.0
        self.keys_refresh_seconds = KEYS_REFRESH_SECONDS
        self._lock = asyncio.Lock()

    async def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (its issuer must be the configured one)."""
        if self._metadata is None:
            url = self.settings.issuer + "/.well-known/openid-configuration"
            document = await self._get_json(url)
            if document.get("issuer", "").rstrip("/") != self.settings.issuer:
                raise SignOnFailed(f"the discovery document names issuer {document.get('issuer')!r}, not the configured one")
            for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(document.get(field), str):
                    raise SignOnFailed(f"the discovery document has no {field}")
            self._metadata = document
        return self._metadata

    async def authorization_url(self, flow: Flow, redirect_uri: str) -> str:
        metadata = await self.metadata()
        return str(prepare_grant_uri(
            metadata["authorization_endpoint"], self.settings.client_id, "code", redirect_uri=redirect_uri,
            scope=" ".join(self.settings.scopes), state=flow.state, nonce=flow.nonce,
            code_challenge=create_s256_code_challenge(flow.verifier), code_challenge_method="S256",
        ))  # fmt: skip

    async def check_response_issuer(self, iss: str | None) -> None:
        """The ``iss`` of an authorization response (RFC 9207), when the provider sends
        one, must be its own: an answer from another provider is refused (mix-up)."""
        if iss is not None and iss != (await self.metadata())["issuer"]:
            raise SignOnFailed("the answer comes from another issuer")

    async def exchange(self, code: str, flow: Flow, redirect_uri: str) -> tuple[str, dict[str, Any]]:
        """The ID token for the authorization ``code``, and its verified claims."""
        metadata = await self.metadata()
        body = prepare_token_request("authorization_code", code=code, redirect_uri=redirect_uri, code_verifier=flow.verifier)
        auth = ClientAuth(self.settings.client_id, self.settings.client_secret, "client_secret_basic")
        url, headers, body = auth.prepare("POST", metadata["token_endpoint"], {"Content-Type": "application/x-www-form-urlencoded"}, body)
        try:
            async with self.http.post(url, data=body, headers={**headers, "Accept": "application/json"}, timeout=TIMEOUT) as answer:
                token = await answer.json(content_type=None) if answer.status < 500 else {}
                if answer.status != 200 or not isinstance(token, dict):
                    error = token.get("error") if isinstance(token, dict) else None
                    raise SignOnFailed(f"the provider refused the code ({answer.status} {error or ''})".strip())
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
            raise SignOnFailed(f"the provider's token endpoint could not be read: {type(exc).__name__}", unreachable=True) from None
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise SignOnFailed("the provider's answer has no ID token")
        return id_token, await self.verify(id_token, flow.nonce)

    async def verify(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The claims of ``id_token`` once its signature (by a key of the provider's
        set), issuer, audience, expiry and nonce are checked; :class:`SignOnFailed` else."""
        metadata = await self.metadata()
        try:
            try:
                token = jwt.decode(id_token, await self.keys())
            except InvalidKeyIdError:
                token = jwt.decode(id_token, await self.keys(refresh=True))
            claims = dict(token.claims)
            jwt.JWTClaimsRegistry(
                leeway=LEEWAY_SECONDS, iss={"essential": True, "value": metadata["issuer"]},
                aud={"essential": True, "value": self.settings.client_id}, exp={"essential": True},
                sub={"essential": True}, nonce={"essential": True, "value": nonce},
            ).validate(claims)  # fmt: skip
        except JoseError as exc:
            raise SignOnFailed(f"the ID token is refused: {exc.error}{': ' + exc.description if exc.description else ''}") from None
        except ValueError:
            raise SignOnFailed("the ID token is refused: it is not a signed JWT") from None
        if isinstance(claims["aud"], list) and len(claims["aud"]) > 1 and claims.get("azp") != self.settings.client_id:
            raise SignOnFailed("the ID token is refused: several audiences and another authorized party")
        return claims

    async def keys(self, refresh: bool = False) -> KeySet:
        """The provider's key set: kept, read again on ``refresh`` (at most every few seconds)."""
        async with self._lock:
            stale = refresh and time.monotonic() - self._keys_read_at >= self.keys_refresh_seconds
            if self._keys is None or stale:
                metadata = await self.metadata()
                document = await self._get_json(metadata["jwks_uri"])
                try:
                    self._keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
                except (JoseError, ValueError, KeyError, TypeError):
                    raise SignOnFailed("the provider's key set cannot be read") from None
                self._keys_read_at = time.monotonic()
            return self._keys

    async def logout_url(self, id_token_hint: str | None, post_logout_redirect_uri: str) -> str | None:
        """The provider's end-session URL (RP-initiated logout), or ``None`` when it has none."""
        metadata = await self.metadata()
        endpoint = metadata.get("end_session_endpoint")
        if not isinstance(endpoint, str):
            return None
        params = {"client_id": self.settings.client_id, "post_logout_redirect_uri": post_logout_redirect_uri}
        if id_token_hint:
            params["id_token_hint"] = id_token_hint
        return str(add_params_to_uri(endpoint, params))

    async def _get_json(self, url: str) -> dict[str, Any]:
        try:
            async with self.http.get(url, headers={"Accept": "application/json"}, timeout=TIMEOUT) as answer:
                if answer.status != 200:
                    raise SignOnFailed(f"{url} answered {answer.status}", unreachable=True)
                body = await answer.content.read(MAX_DOCUMENT_BYTES + 1)
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise SignOnFailed(f"{url} answered a document over {MAX_DOCUMENT_BYTES} bytes")
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise SignOnFailed(f"{url} could not be read: {type(exc).__name__}", unreachable=True) from None
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise SignOnFailed(f"{url} answered something that is not JSON") from None
        if not isinstance(document, dict):
            raise SignOnFailed(f"{url} answered JSON that is not an object")
        return document
