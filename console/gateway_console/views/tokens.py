"""A user's personal access tokens for the management API: list, create (the
token shown once, by post/redirect/get), revoke. Another user's token is not found."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import tokens

from ..i18n import _
from ..forms import future_time, text
from ..web import Ctx, page


def _scopes(ctx: Ctx) -> list[str]:
    return ["read", "write", "admin"] if ctx.user.is_admin else ["read", "write"]


@page()
async def token_list(ctx: Ctx) -> Response:
    listed = await tokens.list_tokens(ctx.admin, ctx.user.id)
    return ctx.render("tokens.html", tokens=listed, scopes=_scopes(ctx), error=None, values={})


@page()
async def token_new(ctx: Ctx) -> Response:
    try:
        scope = text(ctx.form, "scope") or "read"
        if scope not in _scopes(ctx):
            raise ValueError(_("The scope %(scope)s is not yours to give.", scope=repr(scope)))
        token, secret = await tokens.create_token(
            ctx.admin, ctx.user.id, scope=scope, name=text(ctx.form, "name", max_length=100, label=_("The name")),
            expires_at=future_time(text(ctx.form, "expires"), _("The expiry")),
        )  # fmt: skip
    except ValueError as exc:  # FormError, Invalid
        listed = await tokens.list_tokens(ctx.admin, ctx.user.id)
        return ctx.render("tokens.html", status=400, tokens=listed, scopes=_scopes(ctx), error=str(exc), values=dict(ctx.form))
    await ctx.audit("token.create", f"token {token.id}", None, token)
    return ctx.reveal_once(f"/tokens/{token.id}/created", secret)


@page()
async def token_created(ctx: Ctx) -> Response:
    """The new token, shown once (post/redirect/get: a reload creates nothing)."""
    token = await tokens.get_token(ctx.admin, ctx.path_int("token_id"), owner=ctx.user.id)
    path = f"/tokens/{token.id}/created"
    return ctx.shown_once(ctx.render("token_created.html", token=token, secret=ctx.revealed(path)), path)


@page()
async def token_revoke(ctx: Ctx) -> Response:
    token_id = ctx.path_int("token_id")
    before = await tokens.get_token(ctx.admin, token_id, owner=ctx.user.id)
    after = await tokens.revoke_token(ctx.admin, token_id, owner=ctx.user.id)
    await ctx.audit("token.revoke", f"token {token_id}", before, after)
    return ctx.redirect("/tokens", "revoked")
