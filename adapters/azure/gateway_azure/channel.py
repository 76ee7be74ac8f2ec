"""The ``azure`` channel type: Azure OpenAI, the openai channel type at Azure's URLs.

Azure speaks OpenAI's wire format, so this type is
:class:`gateway_openai.channel.OpenAIChannel` (conversion, streams, usage, uploads) with
its extension point filled in: :meth:`AzureChannel.upstream_url` builds Azure's paths and
:meth:`AzureChannel.auth_headers` sends the ``api-key`` header or a Microsoft Entra ID
bearer token (:mod:`.entra`). Azure's error answers are refined by :mod:`.errors`.

The base URL is the resource endpoint (``https://NAME.openai.azure.com``; a trailing
``/openai`` or ``/openai/v1`` is stored without it). The channel's model map names the
deployment of each model (``--model-map gpt-4o=my-gpt4o-deployment``). Settings:

- ``path_style``: ``deployments`` (the default) sends
  ``/openai/deployments/{deployment}/chat/completions?api-version=…`` (and
  ``embeddings``, ``images/…``, ``audio/…``, ``completions``; Responses at
  ``/openai/responses``); ``v1`` sends ``/openai/v1/chat/completions`` and the others
  with the deployment as the body's ``model``.
- ``api_version``: the ``api-version`` query parameter; not set, the deployments style
  sends :data:`DEFAULT_API_VERSION` and the v1 style none.
- ``auth``: ``api_key`` (the channel's key in the ``api-key`` header) or ``entra_id``
  (the key is the application's client secret; ``tenant_id`` and ``client_id`` name the
  application, ``authority`` the Entra ID host, ``scope`` what the token is for).
- ``responses`` and ``max_tokens_param``, as for an openai channel.

The channel's upstream models are the resource's deployments (:mod:`.listing`): ``relaygate
channel models NAME --fetch`` and the console list their names, with the same credentials.
"""

from __future__ import annotations

from urllib.parse import quote

import aiohttp

from gateway_core import ChannelRecord, Exchange, GatewayError, ModelQuery, Reply, Setting, Target, Timeouts, UpstreamError, endpoints
from gateway_openai.channel import OpenAIChannel

from .entra import Credentials, TokenCache, check_authority
from .errors import refine
from .listing import list_deployments

DEFAULT_API_VERSION = "2024-10-21"  # Azure OpenAI's latest GA inference version
DEFAULT_AUTHORITY = "https://login.microsoftonline.com"
DEFAULT_SCOPE = "https://cognitiveservices.azure.com/.default"
UNSERVED = frozenset((endpoints.MODERATIONS, endpoints.REALTIME))  # Azure has no moderations; Realtime is its own API

PATH_STYLE = Setting(
    "path_style", "choice", default="deployments", choices=("deployments", "v1"),
    help="deployments: /openai/deployments/{deployment}/…?api-version=…; v1: /openai/v1/… with the deployment as model",
)  # fmt: skip
API_VERSION = Setting(
    "api_version", "str",
    help=f"the api-version query parameter (not set: {DEFAULT_API_VERSION} on deployments paths, none on v1 paths)",
)  # fmt: skip
AUTH = Setting(
    "auth", "choice", default="api_key", choices=("api_key", "entra_id"),
    help="api_key: the channel's key as the api-key header; entra_id: the key is a Microsoft Entra ID client secret",
)  # fmt: skip
TENANT_ID = Setting("tenant_id", "str", help="auth=entra_id: the directory (tenant) id of the application")
CLIENT_ID = Setting("client_id", "str", help="auth=entra_id: the application (client) id")
AUTHORITY = Setting("authority", "str", default=DEFAULT_AUTHORITY, help="auth=entra_id: the Microsoft Entra ID host tokens come from")
SCOPE = Setting("scope", "str", default=DEFAULT_SCOPE, help="auth=entra_id: the scope tokens are asked for")


def strip_azure_path(base_url: str) -> str:
    """``https://x.openai.azure.com/openai/v1/`` → ``https://x.openai.azure.com``."""
    url = base_url.rstrip("/")
    for suffix in ("/openai/v1", "/openai"):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


class AzureChannel(OpenAIChannel):
    name = "azure"
    settings = (PATH_STYLE, API_VERSION, AUTH, TENANT_ID, CLIENT_ID, AUTHORITY, SCOPE, *OpenAIChannel.settings)

    def __init__(self) -> None:
        self.tokens = TokenCache()

    def wire(self, endpoint: str) -> str | None:
        return None if endpoint in UNSERVED else super().wire(endpoint)

    def normalize_base_url(self, base_url: str) -> str:
        return strip_azure_path(base_url)

    def upstream_url(self, target: Target, path: str) -> str:
        settings, base = target.channel.settings, target.channel.base_url
        rest = path[len("/v1") :] if path.startswith("/v1/") else path
        version = API_VERSION.read(settings)
        if PATH_STYLE.read(settings) == "v1":
            url = f"{base}/openai/v1{rest}"
            return f"{url}?api-version={quote(version, safe='')}" if version else url
        if rest.startswith("/responses"):  # not per deployment: the body's model names it
            url = f"{base}/openai{rest}"
        else:
            url = f"{base}/openai/deployments/{quote(target.upstream_model, safe='')}{rest}"
        return f"{url}?api-version={quote(version or DEFAULT_API_VERSION, safe='')}"

    async def auth_headers(self, exchange: Exchange) -> dict[str, str]:
        target = exchange.target
        return await self._credentials(target.channel, target.api_key, exchange.session, exchange.timeouts)

    async def list_models(self, query: ModelQuery) -> list[str]:
        """The names of the resource's deployments (:mod:`.listing`), asked with the
        channel's key or an Entra ID token as every call is."""
        headers = await self._credentials(query.channel, query.api_key, query.session, query.timeouts)
        try:
            return await list_deployments(query, headers)
        except GatewayError as error:
            if error.upstream_status == 401 and (credentials := entra_credentials(query.channel, query.api_key)) is not None:
                self.tokens.forget(query.channel.id, credentials)  # refused: the next listing fetches a new one
            raise

    async def _credentials(self, channel: ChannelRecord, api_key: str, session: aiohttp.ClientSession, timeouts: Timeouts) -> dict[str, str]:
        credentials = entra_credentials(channel, api_key)
        if credentials is None:
            return {"api-key": api_key}
        return {"Authorization": f"Bearer {await self.tokens.token(channel.id, session, timeouts, credentials)}"}

    async def send(self, exchange: Exchange) -> Reply:
        try:
            return await super().send(exchange)
        except GatewayError as error:
            target = exchange.target
            if error.upstream_status == 401 and (credentials := entra_credentials(target.channel, target.api_key)) is not None:
                # the token was refused (revoked, or expired early), not the client secret,
                # which Entra ID itself judges: fetch a new token, keep the key in rotation
                self.tokens.forget(target.channel.id, credentials)
                error.key_refused = False
            settings = target.channel.settings
            version = API_VERSION.read(settings)
            style = str(PATH_STYLE.read(settings))
            raise refine(error, deployment=target.upstream_model, api_version=version or (DEFAULT_API_VERSION if style == "deployments" else None), path_style=style) from None


def entra_credentials(channel: ChannelRecord, secret: str) -> Credentials | None:
    """The channel's Entra ID credentials when its ``auth`` is ``entra_id`` (``None``:
    it authenticates with an API key), ``secret`` the key in use; an error naming what
    is missing."""
    settings = channel.settings
    if AUTH.read(settings) != "entra_id":
        return None
    tenant, client_id, authority = TENANT_ID.read(settings), CLIENT_ID.read(settings), str(AUTHORITY.read(settings))
    missing = [name for name, value in (("tenant_id", tenant), ("client_id", client_id)) if not value]
    if missing:
        raise UpstreamError(f"the azure channel authenticates with Microsoft Entra ID (auth=entra_id) but its setting {' and '.join(missing)} is not set", retryable=True)
    refused = check_authority(authority)
    if refused is not None:
        raise UpstreamError(f"the azure channel cannot ask for a token: {refused}", retryable=True)
    return Credentials(authority=authority, tenant=str(tenant), client_id=str(client_id), secret=secret, scope=str(SCOPE.read(settings)))
