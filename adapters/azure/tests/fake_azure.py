"""A fake Azure OpenAI resource and a fake Microsoft Entra ID token endpoint, in their
real wire formats, for the azure adapter's tests.

:class:`FakeAzure` serves both of Azure's path styles: per deployment,
``/openai/deployments/{deployment}/{chat/completions, embeddings, images/generations,
audio/speech, audio/transcriptions, completions}?api-version=…`` (the api-version is
required: missing, Azure answers 404 ``Resource not found``; one it does not serve, 400
``API version not supported``), ``/openai/responses``; and ``/openai/v1/…`` with the
deployment as the body's ``model`` (an ``api-version`` there is optional: ``preview``,
``latest`` or ``v1``). It authenticates the ``api-key`` header, or a bearer token the
:class:`FakeEntra` minted and that has not expired (the v1 paths also take the key as a
bearer, as OpenAI's own client sends it), answering 401 in Azure's shape otherwise. Answers carry Azure's extras: the deployment's model name (not the
deployment's), ``prompt_filter_results``, per-choice ``content_filter_results``, and
streams start with Azure's chunk of prompt filter results (empty ``choices``, empty
``id`` and ``model``). A prompt containing :data:`BLOCKED` is refused with Azure's
content-filter 400; an answer to a prompt containing :data:`CUT` ends with
``finish_reason: "content_filter"``.

``GET /openai/deployments?api-version=2022-12-01`` lists the resource's deployments in the
data plane's shape (``{"object": "list", "data": [{"id": DEPLOYMENT, "model": MODEL,
"status": "succeeded", …}]}``), authenticated like the other deployments paths; the
api-version is required (missing: 404) and must be one of ``list_versions`` (else 400
``API version not supported``: the inference versions do not serve this path). Deployments
in ``unready`` are listed with the status ``running`` (being created).

Everything else (echoing the last user message, usage, tool calls, embeddings, audio)
is the openai adapter's fake's, whose wire Azure shares.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import attrs
import orjson
from aiohttp import web

from gateway_core.testing import FakeUpstream
from gateway_openai import fake_media, fake_responses
from gateway_openai.fake_upstream import completion, echo_text, stream_chunks, usage_for

AZURE_KEY = "azure-key-test"
BLOCKED = "forbidden-topic"
CUT = "cut-me-off"
V1_VERSIONS = frozenset(("preview", "latest", "v1"))
SAFE = {name: {"filtered": False, "severity": "safe"} for name in ("hate", "self_harm", "sexual", "violence")}
PROMPT_FILTER = {"prompt_index": 0, "content_filter_results": {**SAFE, "jailbreak": {"filtered": False, "detected": False}}}
OUTPUT_FILTERED = {**SAFE, "violence": {"filtered": True, "severity": "high"}}
JSON = dict[str, Any]


def azure_error(http_status: int, code: str, message: str, **extra: Any) -> web.Response:
    return web.Response(status=http_status, body=orjson.dumps({"error": {"code": code, "message": message, **extra}}), content_type="application/json")


@attrs.define
class FakeEntra(FakeUpstream):
    """``POST /{tenant}/oauth2/v2.0/token``: the client-credentials grant. Mints
    tokens that live ``lifetime`` seconds; refuses a wrong secret as Entra does (401
    ``invalid_client``, ``AADSTS7000215``) and an unknown tenant (400, ``AADSTS90002``)."""

    api_key: str | None = None  # not a bearer-key service: the form carries the secret
    tenant: str = "tenant-test"
    client_id: str = "client-test"
    client_secret: str = "entra-secret-test"
    scope: str = "https://cognitiveservices.azure.com/.default"
    lifetime: int = 3599
    answer_delay: float = 0.0
    issued: dict[str, float] = attrs.field(factory=dict)  # token → when it expires (time.monotonic)

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/{tenant}/oauth2/v2.0/token", self.token)

    async def token(self, request: web.Request) -> web.StreamResponse:
        form = dict(await request.post())
        _, refused = await self.admit(request, {k: ("<secret>" if k == "client_secret" else v) for k, v in form.items()})
        if refused is not None:
            return refused
        if self.answer_delay:
            import asyncio

            await asyncio.sleep(self.answer_delay)
        if request.match_info["tenant"] != self.tenant:
            return self._refuse(400, "invalid_request", f"AADSTS90002: Tenant '{request.match_info['tenant']}' not found.")
        if form.get("grant_type") != "client_credentials" or form.get("scope") != self.scope:
            return self._refuse(400, "invalid_request", "AADSTS900144: The request body must contain the following parameter: 'grant_type'.")
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return self._refuse(401, "invalid_client", "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value.")
        value = "eyJ0eXAi." + secrets.token_urlsafe(24)
        self.issued[value] = time.monotonic() + self.lifetime
        return web.json_response({"token_type": "Bearer", "expires_in": self.lifetime, "ext_expires_in": self.lifetime, "access_token": value})

    def valid(self, token: str) -> bool:
        expires = self.issued.get(token)
        return expires is not None and time.monotonic() < expires

    @staticmethod
    def _refuse(status: int, error: str, description: str) -> web.Response:
        trace = "\r\nTrace ID: 0000\r\nCorrelation ID: 0000\r\nTimestamp: 2026-01-01 00:00:00Z"
        body = {"error": error, "error_description": description + trace, "error_codes": [int(description[6:13])], "timestamp": "2026-01-01 00:00:00Z"}
        return web.json_response(body, status=status)


@attrs.define
class FakeAzure(FakeUpstream):
    api_key: str | None = AZURE_KEY
    deployments: dict[str, str] = attrs.field(factory=lambda: {"chat-dep": "gpt-4o-mini-2024-07-18", "embed-dep": "text-embedding-3-small"})
    api_versions: frozenset[str] = frozenset(("2024-10-21", "2025-04-01-preview"))
    entra: FakeEntra | None = None
    tool_call: JSON | None = None
    list_versions: frozenset[str] = frozenset(("2022-12-01", "2023-03-15-preview"))
    unready: dict[str, str] = attrs.field(factory=dict)  # deployment → model, being created

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/openai/deployments", self.list_deployments)
        for prefix in ("/openai/deployments/{deployment}", "/openai/v1"):
            router.add_post(prefix + "/chat/completions", self.chat)
            router.add_post(prefix + "/embeddings", self.embeddings)
            router.add_post(prefix + "/images/generations", self.images)
            router.add_post(prefix + "/audio/speech", self.speech)
            router.add_post(prefix + "/audio/transcriptions", self.transcriptions)
        router.add_post("/openai/responses", self.responses)
        router.add_post("/openai/v1/responses", self.responses)

    # --- Azure's checks, in its order: the key, the api-version, the deployment ------

    def check(self, request: web.Request, body: Any) -> web.Response | None:
        bearer = request.headers.get("Authorization", "")
        token = bearer[len("Bearer ") :] if bearer.startswith("Bearer ") else None
        v1_key = token == self.api_key and request.path.startswith("/openai/v1/")  # v1 takes the key as a bearer too
        if token is not None and not v1_key and "api-key" not in request.headers:
            if self.entra is None or not self.entra.valid(token):
                return azure_error(401, "401", "Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.")
        elif not v1_key and request.headers.get("api-key") != self.api_key:
            return azure_error(401, "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
        version = request.query.get("api-version")
        if request.path == "/openai/deployments":  # the list of deployments
            if version is None:
                return azure_error(404, "404", "Resource not found")
            if version not in self.list_versions:
                return azure_error(400, "BadRequest", "API version not supported")
            return None
        if "deployment" in request.match_info or request.path == "/openai/responses":
            if version is None:
                return azure_error(404, "404", "Resource not found")
            if version not in self.api_versions:
                return azure_error(400, "BadRequest", "API version not supported")
        elif version is not None and version not in V1_VERSIONS:
            return azure_error(400, "BadRequest", "API version not supported")
        if self.deployment(request, body) not in self.deployments:
            return azure_error(404, "DeploymentNotFound", "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.")
        if BLOCKED in _prompt_text(body):
            return azure_error(
                400, "content_filter",
                "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
                param="prompt", type=None, status=400,
                innererror={"code": "ResponsibleAIPolicyViolation", "content_filter_result": {**SAFE, "violence": {"filtered": True, "severity": "medium"}, "jailbreak": {"filtered": False, "detected": False}}},
            )  # fmt: skip
        return None

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"code": str(status), "message": message}}

    def deployment(self, request: web.Request, body: Any) -> str:
        named = request.match_info.get("deployment")
        if named is not None:
            return named
        model = body.get("model") if isinstance(body, dict) else None
        if model is None and isinstance(body, dict) and isinstance(body.get("fields"), dict):
            model = body["fields"].get("model")  # an upload
        return str(model)

    # --- the routes -------------------------------------------------------------------

    async def list_deployments(self, request: web.Request) -> web.StreamResponse:
        fault, refused = await self.admit(request, None)
        if refused is not None:
            return refused
        listed = [(name, model, "succeeded") for name, model in self.deployments.items()]
        listed += [(name, model, "running") for name, model in self.unready.items()]
        data = [
            {"scale_settings": {"scale_type": "standard"}, "model": model, "owner": "organization-owner", "id": name,
             "status": status, "created_at": 1700000000, "updated_at": 1700000000, "object": "deployment"}
            for name, model, status in listed
        ]  # fmt: skip
        return self.answer({"data": data, "object": "list"}, fault)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refused = await self.admit(request, body)
        if refused is not None:
            return refused
        model = self.deployments[self.deployment(request, body)]
        text = echo_text(body)
        cut = CUT in _prompt_text(body)
        usage = usage_for(body, text)
        if body.get("stream"):
            include_usage = (body.get("stream_options") or {}).get("include_usage") is True
            chunks = [{"choices": [], "created": 0, "id": "", "model": "", "object": "", "prompt_filter_results": [PROMPT_FILTER]}]
            for chunk in stream_chunks({**body, "model": model}, text, usage, include_usage, self.tool_call):
                for choice in chunk["choices"]:
                    choice["content_filter_results"] = {} if choice["delta"].get("role") else SAFE
                    if cut and choice["finish_reason"] == "stop":
                        choice["finish_reason"], choice["content_filter_results"] = "content_filter", OUTPUT_FILTERED
                chunks.append(chunk)
            frames = [b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks]
            return await self.stream(request, frames, fault, end=b"data: [DONE]\n\n")
        answer = completion({**body, "model": model}, text, usage, self.tool_call)
        answer["prompt_filter_results"] = [PROMPT_FILTER]
        for choice in answer["choices"]:
            choice["content_filter_results"] = SAFE
            if cut:
                choice["finish_reason"], choice["content_filter_results"] = "content_filter", OUTPUT_FILTERED
                choice["message"]["content"] = None
        return self.answer(answer, fault)

    async def embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refused = await self.admit(request, body)
        if refused is not None:
            return refused
        answer = fake_media.embeddings(body)
        answer["model"] = self.deployments[self.deployment(request, body)]
        return self.answer(answer)

    async def images(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refused = await self.admit(request, body)
        return refused or self.answer(fake_media.images(self.deployment(request, body), int(body.get("n") or 1), body.get("response_format")))

    async def speech(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refused = await self.admit(request, body)
        return refused or await fake_media.speech(request, body, self.chunk_delay)

    async def transcriptions(self, request: web.Request) -> web.StreamResponse:
        form = await fake_media.read_form(request)
        _, refused = await self.admit(request, form)
        fields = form["fields"]
        return refused or fake_media.transcription(self.deployment(request, form), fields.get("response_format") or "json")

    async def responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refused = await self.admit(request, body)
        if refused is not None:
            return refused
        if not body.get("stream"):
            return self.answer(fake_responses.complete(body, self.tool_call))
        events = list(fake_responses.events(body, self.tool_call))
        frames = [b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events]
        return await self.stream(request, frames, fault)


def _prompt_text(body: Any) -> str:
    """Every text of a request body, to look for the words that trip the filters."""
    if not isinstance(body, dict):
        return ""
    return orjson.dumps(body.get("messages") or body.get("input") or body.get("prompt") or "").decode()
