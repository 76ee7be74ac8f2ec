"""A fake Vertex AI and a fake Google OAuth2 token endpoint, in their real wire formats,
for the vertex adapter's tests.

:class:`FakeGoogleOAuth` serves ``POST /token``, the JWT-bearer grant a service account
uses (``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` and an ``assertion``):
it checks the assertion's RS256 signature with the public half of the test account's
key, its issuer, audience (Google's token endpoint, as google-auth sets it), scope and expiry, and mints access tokens
that live ``lifetime`` seconds; a bad assertion is answered as Google does (400
``invalid_grant``).

:class:`FakeVertex` serves ``POST /{v1,v1beta1}/projects/{p}/locations/{l}/publishers/
{publisher}/models/{model}:{method}``: for ``google``, ``generateContent``,
``streamGenerateContent`` (``?alt=sse``) and ``countTokens`` with the Gemini API's
bodies (the gemini adapter's fake makes the answers), and an embedding model's ``predict``; for ``anthropic``, ``rawPredict``
and ``streamRawPredict`` with Anthropic's Messages body, which must carry an
``anthropic_version`` (``vertex-2023-10-16``, or a dated version as anthropic 2.x's
``AnthropicVertex`` sends it) and no ``model`` (the anthropic adapter's fake
makes the answers), and ``count-tokens:rawPredict``. Each request's bearer token must be
one the fake OAuth server minted and that has not expired (else 401
``UNAUTHENTICATED``); a project other than the fake's is 403 ``PERMISSION_DENIED``.
Errors are Vertex's: ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import asyncio
import base64
import re
import secrets
import time
from typing import Any

import attrs
import orjson
from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from gateway_anthropic.fake_upstream import FakeAnthropic, input_tokens, message_head, output_tokens, stream_events
from gateway_anthropic.fake_upstream import frame as anthropic_frame
from gateway_core.testing import FakeUpstream
from gateway_gemini.fake_upstream import FakeGemini, merge, prompt_tokens

PROJECT = "proj-test"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"  # the audience of every assertion, wherever it is posted
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ANTHROPIC_VERSION = "vertex-2023-10-16"
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def vertex_error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}}
    return web.Response(status=status, body=orjson.dumps(body), headers=headers, content_type="application/json")


@attrs.define
class ServiceAccount:
    """A test service account: an RSA key made for the test run, and its JSON key file."""

    key: rsa.RSAPrivateKey
    email: str = f"relaygate-test@{PROJECT}.iam.gserviceaccount.com"

    @classmethod
    def make(cls) -> ServiceAccount:
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048))

    def info(self, token_uri: str) -> dict[str, Any]:
        pem = self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
        return {"type": "service_account", "project_id": PROJECT, "private_key_id": "kid-test", "private_key": pem,
                "client_email": self.email, "client_id": "100000000000000000001", "token_uri": token_uri}  # fmt: skip

    def json(self, token_uri: str) -> str:
        return orjson.dumps(self.info(token_uri)).decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@attrs.define
class FakeGoogleOAuth(FakeUpstream):
    account: ServiceAccount = attrs.field(factory=ServiceAccount.make)
    api_key: str | None = None  # the assertion is the credential
    lifetime: int = 3599
    answer_delay: float = 0.0
    issued: dict[str, float] = attrs.field(factory=dict)  # token → when it expires (time.monotonic)

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/token", self.token)

    @property
    def token_uri(self) -> str:
        return self.url + "/token"

    async def token(self, request: web.Request) -> web.StreamResponse:
        form = dict(await request.post())
        _, refused = await self.admit(request, {k: ("<assertion>" if k == "assertion" else v) for k, v in form.items()})
        if refused is not None:
            return refused
        if self.answer_delay:
            await asyncio.sleep(self.answer_delay)
        if form.get("grant_type") != JWT_BEARER:
            return self._refuse("unsupported_grant_type", "Invalid grant_type: " + str(form.get("grant_type")))
        claims = self._verified_claims(str(form.get("assertion") or ""))
        if claims is None:
            return self._refuse("invalid_grant", "Invalid JWT Signature.")
        now = time.time()
        if claims.get("iss") != self.account.email or claims.get("aud") != GOOGLE_TOKEN_URI:
            return self._refuse("invalid_grant", "Invalid JWT: iss or aud claim is wrong.")
        if not claims.get("iat", now + 1) <= now + 5 or not now < claims.get("exp", 0) <= now + 3700:
            return self._refuse("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        if claims.get("scope") != SCOPE:
            return self._refuse("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        value = "ya29.fake-" + secrets.token_urlsafe(24)
        self.issued[value] = time.monotonic() + self.lifetime
        return web.json_response({"access_token": value, "expires_in": self.lifetime, "token_type": "Bearer"})

    def _verified_claims(self, assertion: str) -> dict[str, Any] | None:
        try:
            head, payload, signature = assertion.split(".")
            if orjson.loads(_unb64(head)).get("alg") != "RS256":
                return None
            public = self.account.key.public_key()
            public.verify(_unb64(signature), f"{head}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
            claims = orjson.loads(_unb64(payload))
        except Exception:  # any malformed or wrongly signed assertion
            return None
        return claims if isinstance(claims, dict) else None

    def valid(self, token: str) -> bool:
        expires = self.issued.get(token)
        return expires is not None and time.monotonic() < expires

    @staticmethod
    def _refuse(error: str, description: str) -> web.Response:
        return web.json_response({"error": error, "error_description": description}, status=400)


@attrs.define
class FakeVertex(FakeUpstream):
    oauth: FakeGoogleOAuth | None = None
    api_key: str | None = None  # tokens, not keys: checked against the fake OAuth server
    project: str = PROJECT
    gemini: FakeGemini = attrs.field(factory=lambda: FakeGemini(api_key=None))  # makes Gemini's answers
    claude: FakeAnthropic = attrs.field(factory=lambda: FakeAnthropic(api_key=None))  # makes Claude's answers

    error_event = b'data: {"error": {"code": 500, "message": "fake failure mid-stream", "status": "INTERNAL"}}\n\n'

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/{version}/projects/{project}/locations/{location}/publishers/{publisher}/models/{target}", self.dispatch)

    def check(self, request: web.Request, body: Any) -> web.Response | None:
        bearer = request.headers.get("Authorization", "")
        token = bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None
        if token is None or self.oauth is None or not self.oauth.valid(token):
            return vertex_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. "
                                "See https://developers.google.com/identity/sign-in/web/devconsole-project.")  # fmt: skip
        if request.match_info["version"] not in ("v1", "v1beta1"):
            return vertex_error(404, "The requested URL was not found on this server.")
        if request.match_info["project"] != self.project:
            return vertex_error(403, f"Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/{request.match_info['project']}' (or it may not exist).")
        return None

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
        return vertex_error(status, message, headers)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        model, _, method = request.match_info["target"].rpartition(":")
        body = await request.json()
        publisher = request.match_info["publisher"]
        fault, refused = await self.admit(request, body, model=model, method=method, publisher=publisher, location=request.match_info["location"])
        if refused is not None:
            return refused
        if publisher == "google" and method == "predict":
            return self.predict(body)
        if publisher == "google" and method in ("generateContent", "streamGenerateContent", "countTokens"):
            return await self.google(request, model, method, body, fault)
        if publisher == "anthropic" and method in ("rawPredict", "streamRawPredict"):
            return await self.anthropic(request, model, method, body, fault)
        return vertex_error(404, f"Publisher Model `projects/{self.project}/locations/{request.match_info['location']}/publishers/{publisher}/models/{model}` not found.")

    async def google(self, request: web.Request, model: str, method: str, body: dict[str, Any], fault: Any) -> web.StreamResponse:
        if method == "countTokens":
            if "generateContentRequest" in body:  # the Gemini API's shape, not Vertex's
                return vertex_error(400, 'Invalid JSON payload received. Unknown name "generateContentRequest": Cannot find field.')
            return self.answer({"totalTokens": prompt_tokens(body), "totalBillableCharacters": 0})
        if method == "streamGenerateContent":
            return await self._gemini_stream(request, model, body, fault)
        return self.answer(merge(list(self.gemini.chunks(model, body))), fault)

    async def _gemini_stream(self, request: web.Request, model: str, body: dict[str, Any], fault: Any) -> web.StreamResponse:
        datas = [orjson.dumps(chunk) for chunk in self.gemini.chunks(model, body)]
        if request.query.get("alt") == "sse":
            return await self.stream(request, [b"data: " + data + b"\r\n\r\n" for data in datas], fault)
        elements = [(b"[" if n == 0 else b",\r\n") + data for n, data in enumerate(datas)]
        return await self.stream(request, elements, fault, content_type="application/json", end=b"]")

    def predict(self, body: dict[str, Any]) -> web.Response:
        """An embedding model's ``:predict``: eight numbers per instance (its content's
        length and character codes), or ``outputDimensionality`` of them."""
        instances = body.get("instances")
        if not isinstance(instances, list) or not instances or not all(isinstance(i, dict) and isinstance(i.get("content"), str) for i in instances):
            return vertex_error(400, "Invalid JSON payload received: each instance needs a text content.")
        size = (body.get("parameters") or {}).get("outputDimensionality") or 8
        predictions = []
        for instance in instances:
            text = instance["content"]
            values = [float(len(text))] + [float(ord(c)) for c in text[: size - 1]]
            values += [0.0] * (size - len(values))
            predictions.append({"embeddings": {"values": values, "statistics": {"token_count": len(text) // 4 + 1, "truncated": False}}})
        return self.answer({"predictions": predictions, "metadata": {"billableCharacterCount": sum(len(i["content"]) for i in instances)}})

    async def anthropic(self, request: web.Request, model: str, method: str, body: dict[str, Any], fault: Any) -> web.StreamResponse:
        if model == "count-tokens":
            if not body.get("model"):
                return vertex_error(400, "model: Field required")
            return self.answer({"input_tokens": input_tokens(body)})
        version = body.get("anthropic_version")
        if not isinstance(version, str) or not (version == ANTHROPIC_VERSION or re.fullmatch(r"\d{4}-\d{2}-\d{2}", version)):
            return _anthropic_error(400, f"anthropic_version: Field required (for example '{ANTHROPIC_VERSION}')")
        if "model" in body:
            return _anthropic_error(400, "model: Extra inputs are not permitted")
        if not isinstance(body.get("max_tokens"), int):
            return _anthropic_error(400, "max_tokens: Field required")
        if (method == "streamRawPredict") != bool(body.get("stream")):
            return vertex_error(400, "stream must be true for streamRawPredict and false or absent for rawPredict")
        named = {**body, "model": model}
        blocks = self.claude.answer_blocks(named)
        usage = {"input_tokens": input_tokens(body), "output_tokens": output_tokens(blocks), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        if body.get("stream"):
            frames = [anthropic_frame(name, payload) for name, payload in stream_events(named, blocks, usage, stop)]
            return await self.stream(request, frames, fault)
        return self.answer({**message_head(named), "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}, fault)


def _anthropic_error(status: int, message: str) -> web.Response:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")
