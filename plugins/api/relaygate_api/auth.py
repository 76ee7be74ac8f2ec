"""Who calls the management API: a personal access token (``Authorization:
Bearer rgt-…``) or a console session (its cookie, and for writes its CSRF
token in ``X-CSRF-Token``), read by the plugins' :class:`~gateway_core.sign_in.SessionReader` s.

A relay API key (``sk-…``) is refused with 401 and a message that says so.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import attrs
from starlette.datastructures import Headers

from gateway_core.store.access_records import Actor
from gateway_core.admin import Admin
from gateway_core.admin.tokens import allows, token_holder
from gateway_core.errors import AuthenticationError
from gateway_core.key_header import bearer_key
from gateway_core.secrets import API_KEY_PREFIX
from .errors import ApiError
from gateway_core.sign_in import SessionReader

RELAY_KEY = (
    "This is a relay API key (sk-…), which calls models; the management API takes a personal access token "
    "(rgt-…) in 'Authorization: Bearer': create one with 'relaygate token create USER'."
)
NO_CREDENTIALS = "Send a personal access token in 'Authorization: Bearer rgt-…' (or sign in to the console)."


@attrs.frozen
class Principal:
    """The user an API request acts as, and what it may do."""

    user_id: int
    user_name: str
    is_admin: bool
    scope: str  # read, write or admin
    via: str  # token or session
    token_id: int | None = None
    csrf_valid: bool = False

    def actor(self, request_id: str) -> Actor:
        return Actor(self.via, self.user_id, self.user_name, self.token_id, request_id)


async def authenticate(admin: Admin, scope: MutableMapping[str, Any], readers: Sequence[SessionReader]) -> Principal:
    headers = Headers(scope=scope)
    authorization = headers.get("authorization")
    if authorization is None and headers.get("x-api-key"):
        raise ApiError(401, RELAY_KEY, code="relay_key")
    if authorization is not None:
        try:
            secret = bearer_key(authorization)
        except AuthenticationError as exc:
            raise ApiError(401, exc.message) from None
        if secret.startswith(API_KEY_PREFIX):
            raise ApiError(401, RELAY_KEY, code="relay_key")
        token = await token_holder(admin, secret)
        if token is None:
            raise ApiError(401, "The access token is unknown, revoked or expired, or its user is disabled.", code="invalid_token")
        return Principal(token.user_id, token.user_name, token.user_is_admin, token.scope, "token", token.id)
    for reader in readers:
        session = await reader.read_session(dict(scope))
        if session is not None:
            scope_name = "admin" if session.is_admin else "write"
            return Principal(session.user_id, session.user_name, session.is_admin, scope_name, "session", None, session.csrf_valid)
    raise ApiError(401, NO_CREDENTIALS)


def authorize(principal: Principal, needed: str, method: str) -> None:
    """403 unless ``principal`` may run an operation that needs ``needed``."""
    if needed == "admin" and not principal.is_admin:
        raise ApiError(403, "This operation is for admins only.")
    if not allows(principal.scope, needed):
        raise ApiError(403, f"This token's scope is {principal.scope!r}; this operation needs {needed!r}.", code="insufficient_scope")
    if principal.via == "session" and method not in ("GET", "HEAD") and not principal.csrf_valid:
        raise ApiError(403, "A write with the console's session needs its CSRF token in 'X-CSRF-Token'.", code="csrf")
