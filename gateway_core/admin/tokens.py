"""Personal access tokens: what scripts present to the management API.

A token (``rgt-…``) belongs to a user and acts as that user with a scope:
``read`` (read the user's own data), ``write`` (change it too) or ``admin``
(an admin user's operator operations; only an admin may hold one). Its secret
is stored only hashed and shown once; it may expire, and it is revoked for
good. A relay API key (``sk-…``) is never a token.
"""

from __future__ import annotations

import time

from ..store.access_records import SCOPES, TOKEN_PREFIX, AccessTokenRecord
from ..secrets import hash_key
from .context import Admin
from .errors import Invalid, NotFound
from .users import live_user

MAX_NAME = 100
TOUCH_EVERY = 60.0  # seconds between two records of a token's last use


async def create_token(
    admin: Admin, user_id: int, *, scope: str = "read", name: str = "", expires_at: float | None = None
) -> tuple[AccessTokenRecord, str]:
    """Create a token for a user; the token and its secret, shown only now."""
    if scope not in SCOPES:
        raise Invalid(f"must be one of {', '.join(SCOPES)}, not {scope!r}", "scope")
    if len(name) > MAX_NAME:
        raise Invalid(f"must be at most {MAX_NAME} characters", "name")
    if expires_at is not None and expires_at <= time.time():
        raise Invalid("must be in the future", "expires")
    user = await live_user(admin, user_id)
    if scope == "admin" and not user.is_admin:
        raise Invalid(f"admin is only for admin users, and {user.name!r} is not one", "scope")
    return await admin.store.create_token(user.id, name=name or "token", scope=scope, expires_at=expires_at)


async def list_tokens(admin: Admin, user_id: int | None = None) -> list[AccessTokenRecord]:
    """A user's tokens (everyone's for ``None``), oldest first, revoked ones too."""
    return await admin.store.list_tokens(user_id)


async def get_token(admin: Admin, token_id: int, *, owner: int | None = None) -> AccessTokenRecord:
    token = await admin.store.get_token(token_id)
    if token is None or (owner is not None and token.user_id != owner):
        raise NotFound(f"no access token with id {token_id}")
    return token


async def revoke_token(admin: Admin, token_id: int, *, owner: int | None = None) -> AccessTokenRecord:
    """Revoke a token for good (revoking a revoked token changes nothing)."""
    token = await get_token(admin, token_id, owner=owner)
    if token.revoked_at is None:
        await admin.store.revoke_token(token_id)
    return await get_token(admin, token_id)


async def token_holder(admin: Admin, secret: str) -> AccessTokenRecord | None:
    """The usable token whose secret is ``secret`` (not revoked, not expired,
    its user enabled), else ``None``. Its last use is recorded (to the minute)."""
    if not secret.startswith(TOKEN_PREFIX):
        return None
    token = await admin.store.find_token(hash_key(secret))
    now = time.time()
    if token is None or not token.usable(now):
        return None
    if token.last_used_at is None or now - token.last_used_at >= TOUCH_EVERY:
        await admin.store.touch_token(token.id, now)
    return token


def allows(scope: str, needed: str) -> bool:
    """Whether a token of ``scope`` may do what needs ``needed`` (read < write < admin)."""
    return SCOPES.index(scope) >= SCOPES.index(needed)
