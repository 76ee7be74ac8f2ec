"""``/api/v1/me`` and ``/api/v1/tokens``: who the caller is, and their personal
access tokens (a token creates tokens of its own scope or below)."""

from __future__ import annotations

from typing import Any

from gateway_core.store.access_records import SCOPES
from gateway_core.admin import tokens, users
from .errors import ApiError
from .operation import ApiCall, Operation
from .schema import NAME, array, obj
from .shapes import EXPIRES, NEW_TOKEN, TOKEN, USER, parse_expires, token_json, user_json

ME = obj(
    {"user": USER, "scope": {"enum": list(SCOPES)}, "via": {"enum": ["token", "session"]}, "token_id": {"type": ["integer", "null"]}},
    ("user", "scope", "via", "token_id"),
)
CREATE = obj({"name": NAME, "scope": {"enum": list(SCOPES)}, "expires_at": EXPIRES})


async def get_me(call: ApiCall) -> dict[str, Any]:
    user = await users.get_user(call.admin, call.user_id)
    return {"user": user_json(user), "scope": call.principal.scope, "via": call.principal.via, "token_id": call.principal.token_id}


async def list_tokens(call: ApiCall) -> list[dict[str, Any]]:
    return [token_json(token) for token in await tokens.list_tokens(call.admin, call.user_id)]


async def create_token(call: ApiCall) -> dict[str, Any]:
    scope = call.body.get("scope", "read")
    if not tokens.allows(call.principal.scope, scope):
        raise ApiError(403, f"A {call.principal.scope!r} caller cannot create a {scope!r} token.", code="insufficient_scope")
    token, secret = await tokens.create_token(
        call.admin, call.user_id, scope=scope, name=call.body.get("name", ""), expires_at=parse_expires(call.body.get("expires_at"))
    )
    data = token_json(token)
    await call.audit("token.create", f"token {token.id}", None, data)
    return {"id": token.id, "token": secret, "record": data}


async def revoke_token(call: ApiCall) -> dict[str, Any]:
    token_id = call.path["token_id"]
    before = await tokens.get_token(call.admin, token_id, owner=call.user_id)
    after = await tokens.revoke_token(call.admin, token_id, owner=call.user_id)
    await call.audit("token.revoke", f"token {token_id}", token_json(before), token_json(after))
    return token_json(after)


async def list_user_tokens(call: ApiCall) -> list[dict[str, Any]]:
    user = await users.get_user(call.admin, call.path["user_id"])
    return [token_json(token) for token in await tokens.list_tokens(call.admin, user.id)]


async def revoke_user_token(call: ApiCall) -> dict[str, Any]:
    user_id, token_id = call.path["user_id"], call.path["token_id"]
    before = await tokens.get_token(call.admin, token_id, owner=user_id)
    after = await tokens.revoke_token(call.admin, token_id, owner=user_id)
    await call.audit("token.revoke", f"token {token_id}", token_json(before), token_json(after))
    return token_json(after)


TAG = "tokens"
OPERATIONS = (
    Operation("GET", "/me", "Who the caller is: the user, and the scope of the token or session", TAG, "read", get_me, ME, errors=(401,)),
    Operation("GET", "/tokens", "List your access tokens", TAG, "read", list_tokens, array(TOKEN), errors=(401,)),
    Operation("POST", "/tokens", "Create an access token (of your scope or below; its secret is in this response only)", TAG, "write", create_token, NEW_TOKEN, body=CREATE, status=201),
    Operation("DELETE", "/tokens/{token_id}", "Revoke one of your access tokens", TAG, "write", revoke_token, TOKEN, errors=(401, 403, 404)),
    Operation("GET", "/users/{user_id}/tokens", "List a user's access tokens (admin)", "users", "admin", list_user_tokens, array(TOKEN), errors=(401, 403, 404)),
    Operation("DELETE", "/users/{user_id}/tokens/{token_id}", "Revoke a user's access token (admin)", "users", "admin", revoke_user_token, TOKEN, errors=(401, 403, 404)),
)
