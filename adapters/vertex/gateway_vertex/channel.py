"""The ``vertex`` channel type: Google Cloud Vertex AI, serving Gemini and Claude.

A vertex channel names its Google Cloud ``project`` and ``location`` (a region such
as ``us-central1``, or ``global``) in its settings, and each model goes to its
publisher's endpoint:

- **Gemini** (publisher ``google``): ``POST {base}/v1/projects/{p}/locations/{l}/
  publishers/google/models/{m}:generateContent``, ``:streamGenerateContent?alt=sse``
  and ``:countTokens``. The wire is the Gemini API's, so this is the gemini adapter's
  channel type (:class:`gateway_gemini.channel.GeminiChannel`) at Vertex's URLs with a
  bearer token (its extension point).
- **Claude** (publisher ``anthropic``): ``…/publishers/anthropic/models/{m}:rawPredict``
  and ``:streamRawPredict``, the Anthropic Messages body without ``model`` and with
  ``"anthropic_version": "vertex-2023-10-16"``; a count goes to
  ``…/models/count-tokens:rawPredict`` with the model in its body. This is the
  anthropic adapter's channel type (:class:`gateway_anthropic.channel.AnthropicChannel`)
  at Vertex's URLs (its extension point).

The publisher is the setting ``publisher``, or by default read from the mapped model:
``claude-…`` is Anthropic's, everything else Google's. A request of another protocol is
converted through the core; an Anthropic client's Claude request
and a Gemini client's Gemini chat take the fast path (:meth:`VertexChannel.model_wire`):
their bodies go as sent, with only Vertex's changes (the model moved to the URL, the
``anthropic_version``), so every field the client sent reaches Vertex.

Embeddings (an OpenAI client's ``/v1/embeddings``, a Gemini client's ``embedContent``)
go to Vertex's ``:predict`` for Google's embedding models (:mod:`.embeddings`).

The base URL is where the API lives: ``https://{location}-aiplatform.googleapis.com``
(``{location}`` replaced by the location; for ``global``, which has no regional host,
``https://aiplatform.googleapis.com``; for the multi-regions ``us`` and ``eu``,
``https://aiplatform.{us,eu}.rep.googleapis.com``), or any fixed URL (a private endpoint, a
loopback test); a trailing ``/v1`` is stored without it. Authentication: see
:mod:`.auth`. A 401 (the token expired or was revoked early) fetches a new token and
tries once more.
"""

from __future__ import annotations

from typing import Any

import attrs
from urllib.parse import quote

from gateway_core import ChannelRecord, ChannelType, Exchange, GatewayError, ModelQuery, ModelsNotListed, Reply, Setting, Target, UpstreamError, endpoints
from gateway_core.model import ChatRequest
from gateway_anthropic.channel import MAX_TOKENS, PARAMETER_RULES, AnthropicChannel
from gateway_gemini.channel import SIGNATURE_PLACEHOLDER, GeminiChannel

from .auth import DEFAULT, Source, TokenCache, service_account
from .embeddings import send_embeddings

WIRE = "vertex"  # no client speaks it: every request is converted (see the module's docstring)
SERVED = frozenset((endpoints.CHAT, endpoints.COUNT_TOKENS, endpoints.EMBEDDINGS))
ANTHROPIC_VERSION = "vertex-2023-10-16"
GLOBAL_HOST = "https://aiplatform.googleapis.com"
REGIONAL_HOST = "https://{location}-aiplatform.googleapis.com"
MULTI_REGIONS = frozenset(("us", "eu"))  # served at aiplatform.{location}.rep.googleapis.com

PROJECT = Setting("project", "str", help="the Google Cloud project id the models are called in")
LOCATION = Setting("location", "str", default="global", help="the Vertex AI location: a region (us-central1, europe-west4 …) or global")
PUBLISHER = Setting(
    "publisher", "choice", default="auto", choices=("auto", "google", "anthropic"),
    help="whose models the channel serves: auto (claude-* is anthropic's, the rest google's), google (Gemini) or anthropic (Claude)",
)  # fmt: skip
CREDENTIALS = Setting(
    "credentials", "choice", default="service_account", choices=("service_account", "default"),
    help="service_account: the channel's key is a service account's JSON key; default: the environment's application default credentials",
)  # fmt: skip


def location_of(target: Target) -> str:
    location = LOCATION.read(target.channel.settings)
    return str(location).strip() if location and str(location).strip() else "global"


def project_of(target: Target) -> str:
    project = PROJECT.read(target.channel.settings)
    if not project or not str(project).strip():
        raise UpstreamError("the vertex channel's setting project is not set: --setting project=YOUR-PROJECT-ID", retryable=True)
    return str(project).strip()


def api_base(target: Target) -> str:
    """The channel's base URL with its location filled in: a
    ``https://{location}-aiplatform.googleapis.com`` base is the location's host,
    ``aiplatform.googleapis.com`` for ``global`` and ``aiplatform.{us,eu}.rep.googleapis.com``
    for the multi-regions."""
    location, base = location_of(target), target.channel.base_url
    if base.startswith(REGIONAL_HOST):
        if location == "global":
            return GLOBAL_HOST + base[len(REGIONAL_HOST) :]
        if location in MULTI_REGIONS:
            return f"https://aiplatform.{location}.rep.googleapis.com" + base[len(REGIONAL_HOST) :]
    return base.replace("{location}", quote(location, safe=""))


def publisher_of(target: Target) -> str:
    return publisher_for(target.channel, target.upstream_model)


def publisher_for(channel: ChannelRecord, upstream_model: str) -> str:
    """``anthropic`` or ``google``: the setting ``publisher``, else by the model's id."""
    chosen = str(PUBLISHER.read(channel.settings))
    if chosen != "auto":
        return chosen
    return "anthropic" if upstream_model.rsplit("/", 1)[-1].startswith("claude") else "google"


def model_url(target: Target, publisher: str, model: str, method: str) -> str:
    """``{base}/v1/projects/{p}/locations/{l}/publishers/{publisher}/models/{model}:{method}``."""
    location = quote(location_of(target), safe="")
    return (
        f"{api_base(target)}/v1/projects/{quote(project_of(target), safe='')}/locations/{location}"
        f"/publishers/{publisher}/models/{quote(model, safe='-._~@')}:{method}"
    )


def source_of(target: Target) -> Source:
    if CREDENTIALS.read(target.channel.settings) == "default":
        return DEFAULT
    return service_account(target.api_key)


class _Bearer:
    """The token of one vertex channel as an ``Authorization`` header."""

    tokens: TokenCache

    async def auth_headers(self, exchange: Exchange) -> dict[str, str]:
        token = await self.tokens.token(exchange, source_of(exchange.target))
        return {"Authorization": f"Bearer {token}"}


class VertexGemini(_Bearer, GeminiChannel):
    """Gemini on Vertex: the gemini channel type at Vertex's URLs."""

    name = "vertex"

    def __init__(self, tokens: TokenCache) -> None:
        self.tokens = tokens

    def upstream_url(self, target: Target, method: str) -> str:
        return model_url(target, "google", target.upstream_model.removeprefix("models/"), method)

    def count_body(self, request: ChatRequest, upstream_model: str) -> dict[str, Any]:
        inner = dict(super().count_body(request, upstream_model)["generateContentRequest"])
        inner.pop("model", None)  # Vertex's countTokens takes the request's fields at the top
        return inner


class VertexClaude(_Bearer, AnthropicChannel):
    """Claude on Vertex: the anthropic channel type at Vertex's URLs."""

    name = "vertex"

    def __init__(self, tokens: TokenCache) -> None:
        super().__init__()
        self.tokens = tokens

    def upstream_request(self, target: Target, endpoint: str, body: dict[str, Any], stream: bool, options: Any) -> tuple[str, dict[str, Any]]:
        if endpoint == endpoints.COUNT_TOKENS:  # one endpoint counts for every Claude model, named in the body
            return model_url(target, "anthropic", "count-tokens", "rawPredict"), {"anthropic_version": ANTHROPIC_VERSION, **body}
        model = str(body.get("model") or target.upstream_model)
        body = {name: value for name, value in body.items() if name != "model"}
        body.setdefault("anthropic_version", ANTHROPIC_VERSION)
        return model_url(target, "anthropic", model, "streamRawPredict" if stream else "rawPredict"), body


class VertexEmbeddings(_Bearer, ChannelType):
    """Embeddings on Vertex: ``…/publishers/google/models/{m}:predict`` (:mod:`.embeddings`)."""

    name = "vertex"

    def __init__(self, tokens: TokenCache) -> None:
        self.tokens = tokens

    def wire(self, endpoint: str) -> str | None:
        return WIRE if endpoint == endpoints.EMBEDDINGS else None

    async def send(self, exchange: Exchange) -> Reply:
        url = model_url(exchange.target, "google", exchange.target.upstream_model.removeprefix("models/"), "predict")
        return await send_embeddings(exchange, url, await self.auth_headers(exchange))


def keeping_key(error: GatewayError) -> GatewayError:
    """Vertex's 401 refuses a token (fetched again), its 403 a permission or a model not
    enabled in this project or location, often for one model only: the channel fails
    over, but its key (the service account) stays in rotation."""
    if error.upstream_status in (401, 403):
        error.key_refused = False
    return error


class VertexChannel(ChannelType):
    name = "vertex"
    settings = (PROJECT, LOCATION, PUBLISHER, CREDENTIALS, MAX_TOKENS, PARAMETER_RULES, SIGNATURE_PLACEHOLDER)

    def __init__(self) -> None:
        self.tokens = TokenCache()
        self.gemini = VertexGemini(self.tokens)
        self.claude = VertexClaude(self.tokens)
        self.embedder = VertexEmbeddings(self.tokens)

    def wire(self, endpoint: str) -> str | None:
        return WIRE if endpoint in SERVED else None

    def model_wire(self, endpoint: str, channel: ChannelRecord, upstream_model: str) -> str | None:
        """Anthropic's wire (messages, count_tokens) for Claude, the Gemini API's for
        Gemini's chat: those clients' bodies go the fast path. A Gemini count is always
        converted (a Gemini API client may wrap it in ``generateContentRequest``, which
        Vertex does not take)."""
        if endpoint not in SERVED:
            return None
        if endpoint == endpoints.EMBEDDINGS:
            return WIRE  # Vertex's :predict: every client's embeddings are converted (embeddings.py)
        if publisher_for(channel, upstream_model) == "anthropic":
            return self.claude.wire(endpoint)
        return self.gemini.wire(endpoint) if endpoint == endpoints.CHAT else WIRE

    def normalize_base_url(self, base_url: str) -> str:
        url = base_url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    async def send(self, exchange: Exchange) -> Reply:
        target = exchange.target
        inner: ChannelType = self.claude if publisher_of(target) == "anthropic" else self.gemini
        if exchange.call.endpoint == endpoints.EMBEDDINGS:
            inner = self.embedder
        project_of(target)  # said before any token is fetched
        if exchange.passthrough and inner is self.gemini and "model" in exchange.call.body:
            # a Gemini client repeating the URL's model in its body: Vertex names it only in the URL
            body = {name: value for name, value in exchange.call.body.items() if name != "model"}
            exchange = attrs.evolve(exchange, call=attrs.evolve(exchange.call, body=body))
        source = source_of(target)
        token = await self.tokens.token(exchange, source)
        try:
            return await inner.send(exchange)
        except GatewayError as error:
            if error.upstream_status != 401:
                raise keeping_key(error) from None
            # the token was refused (expired or revoked early), not the account's key,
            # which Google's token endpoint judges: fetch a new one and try once more
            self.tokens.forget(target.channel.id, source, token)
        try:
            return await inner.send(exchange)
        except GatewayError as error:
            raise keeping_key(error) from None

    async def list_models(self, query: ModelQuery) -> list[str]:
        raise ModelsNotListed(
            "a vertex channel cannot list its models: Vertex AI's model garden is not a list of what the project may call; "
            "name the models (gemini-2.5-flash, claude-sonnet-4-5@20250929 …) in the channel's models"
        )
