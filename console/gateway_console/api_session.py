"""The console's sessions on the management API: a
:class:`gateway_core.sign_in.SessionReader` over the same signed cookie,
session table and CSRF token as the console's pages (:mod:`.sessions`), so a
page's script may call ``/api/v1/`` as the signed-in user."""

from __future__ import annotations

import asyncio
from http.cookies import SimpleCookie
from typing import Any

from gateway_core import services_from_scope
from gateway_core.sign_in import CSRF_HEADER, SessionUser
from starlette.datastructures import Headers

from . import queries
from .sessions import SESSION_COOKIE, Signer, session_id


class ConsoleSessionReader:
    def __init__(self) -> None:
        self._signer: Signer | None = None
        self._lock = asyncio.Lock()

    async def read_session(self, scope: dict[str, Any]) -> SessionUser | None:
        headers = Headers(scope=scope)
        cookie = _cookie(headers.get("cookie", ""))
        if cookie is None:
            return None
        services = services_from_scope(scope)
        signer = await self._signer_of(services)
        token = signer.token_from_cookie(cookie) if signer else None
        if token is None:
            return None
        row = await queries.find_session(services.sql, session_id(token))
        if row is None:
            return None
        return SessionUser(int(row["id"]), str(row["name"]), bool(row["is_admin"]), signer.check_csrf(token, headers.get(CSRF_HEADER)))  # type: ignore[union-attr]

    async def _signer_of(self, services: Any) -> Signer | None:
        if self._signer is None:
            async with self._lock:
                if self._signer is None:
                    secret = await queries.session_secret(services.sql)
                    self._signer = Signer(secret) if secret else None
        return self._signer


def _cookie(header: str) -> str | None:
    if SESSION_COOKIE not in header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed Cookie header is no session
        return None
    morsel = jar.get(SESSION_COOKIE)
    return morsel.value if morsel is not None else None
