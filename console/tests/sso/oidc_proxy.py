"""A loopback HTTP proxy in front of the real OpenID provider of ``conftest.py``, for
the tests of what the gateway refuses in a real sign-in.

The provider's issuer is the proxy's URL, so the browser and the gateway reach
discovery, keys, sign-in, token and end-session through it; it passes requests and
answers on unchanged (the ``Host`` too, from which the provider builds its URLs)
and notes what went by. ``edit_token``, when set, rewrites the token endpoint's
answer on its way to the gateway. The proxy is also a second, minimal relying party
of the provider (the client ``another-app``, redirect URI :attr:`other_redirect_uri`):
a browser sent to :meth:`other_app_sign_in` signs in there and the proxy keeps the
ID token the provider issued to that app (:attr:`other_tokens`)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from .conftest import OTHER_CLIENT, OTHER_SECRET, free_port

TokenEdit = Callable[[dict[str, Any]], dict[str, Any]]
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length"})
OTHER_CALLBACK = "/another-app/callback"  # served by the proxy itself, never passed on


def id_token_claims(id_token: str) -> dict[str, Any]:
    """The payload of a compact JWS, unverified (what went by, for the tests' checks)."""
    payload = id_token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def with_claims(id_token: str, **claims: Any) -> str:
    """``id_token`` with ``claims`` changed in its payload, its header and signature kept."""
    header, _, signature = id_token.split(".")
    payload = json.dumps({**id_token_claims(id_token), **claims}, separators=(",", ":")).encode()
    return ".".join([header, base64.urlsafe_b64encode(payload).rstrip(b"=").decode(), signature])


class ProviderProxy:
    """Started with :meth:`start` on the provider's own URL, stopped with :meth:`stop`."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.other_redirect_uri = self.url + OTHER_CALLBACK
        self.upstream = ""
        self.edit_token: TokenEdit | None = None
        self.seen: list[tuple[str, str]] = []  # (method, path) of every request passed on
        self.authorizations: list[dict[str, str]] = []  # the query of each authorization request
        self.token_answers: list[dict[str, Any]] = []  # the token endpoint's answers, as the provider gave them
        self.other_tokens: list[str] = []  # ID tokens the provider issued to another-app
        self.endpoints: dict[str, str] = {}  # the discovery document's endpoints, as paths
        self._verifiers: dict[str, str] = {}  # state -> PKCE verifier of another-app's sign-ins
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._http: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self._failure: BaseException | None = None

    def start(self, upstream: str) -> ProviderProxy:
        self.upstream = upstream
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="oidc-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(15) or self._failure is not None:
            raise RuntimeError(f"the proxy did not start: {self._failure!r}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._loop.is_running():
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(15)
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(15)
        self._thread = None

    def other_app_sign_in(self, nonce: str) -> str:
        """The authorization URL of a sign-in of another-app with ``nonce`` (PKCE S256)."""
        state, verifier = secrets.token_urlsafe(16), secrets.token_urlsafe(48)
        self._verifiers[state] = verifier
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "client_id": OTHER_CLIENT, "response_type": "code", "scope": "openid email profile groups",
            "redirect_uri": self.other_redirect_uri, "state": state, "nonce": nonce,
            "code_challenge": challenge, "code_challenge_method": "S256",
        }  # fmt: skip
        return self.url + self.endpoints["authorization_endpoint"] + "?" + urlencode(query)

    def passed(self, endpoint: str) -> bool:
        """Whether a request to the discovery document's ``endpoint`` went through."""
        return any(path == self.endpoints[endpoint] for _, path in self.seen)

    # --- on the proxy's own loop -----------------------------------------------------------

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._open())
        except BaseException as exc:  # reported by start()
            self._failure = exc
        ready.set()
        if self._failure is None:
            loop.run_forever()
        loop.close()

    async def _open(self) -> None:
        self._http = aiohttp.ClientSession(auto_decompress=False)
        app = web.Application()
        app.router.add_route("GET", OTHER_CALLBACK, self._other_app_callback)
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        discovery = self.upstream + "/.well-known/openid-configuration"
        async with self._http.get(discovery, headers={"Host": urlsplit(self.url).netloc}) as answer:
            document = await answer.json()
        self.endpoints = {name: urlsplit(url).path for name, url in document.items() if name.endswith("_endpoint") or name == "jwks_uri"}

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._http is not None:
            await self._http.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._http is not None
        self.seen.append((request.method, request.path))
        if request.path == self.endpoints["authorization_endpoint"]:
            self.authorizations.append(dict(request.query))
        headers = CIMultiDict((name, value) for name, value in request.headers.items() if name.lower() not in HOP_BY_HOP)
        body = await request.read()
        async with self._http.request(request.method, self.upstream + request.path_qs, headers=headers, data=body or None, allow_redirects=False) as answer:
            payload = await answer.read()
            status = answer.status
            answer_headers = CIMultiDict((name, value) for name, value in answer.headers.items() if name.lower() not in HOP_BY_HOP)
        if request.method == "POST" and request.path == self.endpoints["token_endpoint"] and status == 200:
            assert "content-encoding" not in answer_headers, "the token answer is expected uncompressed"
            token = json.loads(payload)
            self.token_answers.append(token)
            if self.edit_token is not None:
                payload = json.dumps(self.edit_token(dict(token))).encode()
        return web.Response(status=status, body=payload, headers=answer_headers)

    async def _other_app_callback(self, request: web.Request) -> web.StreamResponse:
        """another-app's redirect URI: its code exchanged for its tokens, the ID token kept."""
        assert self._http is not None
        verifier = self._verifiers.pop(request.query.get("state", ""), None)
        if verifier is None or "code" not in request.query:
            return web.Response(status=400, text=f"another-app: no sign-in of its own ({dict(request.query)})")
        form = {"grant_type": "authorization_code", "code": request.query["code"], "redirect_uri": self.other_redirect_uri, "code_verifier": verifier}
        token_url = self.upstream + self.endpoints["token_endpoint"]
        auth = "Basic " + base64.b64encode(f"{OTHER_CLIENT}:{OTHER_SECRET}".encode()).decode()  # client_secret_basic
        async with self._http.post(token_url, data=form, headers={"Host": request.host, "Authorization": auth}) as answer:
            token = await answer.json(content_type=None)
        if answer.status != 200 or "id_token" not in token:
            return web.Response(status=502, text=f"another-app: the provider refused the code ({token})")
        self.other_tokens.append(token["id_token"])
        return web.Response(text="another-app: signed in")
