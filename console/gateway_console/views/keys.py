"""A user's API keys: list, create (the secret shown once), edit limits,
enable/disable, delete. Every route by id acts as the key's owner: another
user's key is not found."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from gateway_core.admin import Locked, keys, users

from ..forms import optional_usd, split_list, text, when
from ..web import Ctx, page


@page()
async def key_list(ctx: Ctx) -> Response:
    listed = await keys.list_keys(ctx.admin, ctx.user.id)
    user = await users.get_user(ctx.admin, ctx.user.id)
    return ctx.render("keys.html", keys=listed, groups=user.groups)


def _limits(ctx: Ctx) -> dict[str, Any]:
    form = ctx.form
    return {
        "name": text(form, "name", required="Give the key a name.", max_length=100),
        "quota_micros": optional_usd(text(form, "quota"), "Quota"),
        "expires_at": when(text(form, "expires"), "Expiry"),
        "models": split_list(text(form, "models", max_length=5000)),
        "allow_ips": split_list(text(form, "allow_ips", max_length=5000)),
    }


@page()
async def key_new(ctx: Ctx) -> Response:
    groups = (await users.get_user(ctx.admin, ctx.user.id)).groups
    if ctx.request.method == "GET":
        return ctx.render("key_form.html", key=None, groups=groups, values={}, error=None)
    try:
        fields = _limits(ctx)
        group = text(ctx.form, "group") or None
        key, secret = await keys.create_key(ctx.admin, ctx.user.id, group=group, owner=ctx.user.id, **fields)
        await ctx.audit("key.create", f"key {key.id}", None, key)
    except ValueError as exc:  # FormError, Invalid
        return ctx.render("key_form.html", status=400, key=None, groups=groups, values=dict(ctx.form), error=str(exc))
    response = ctx.render("key_created.html", key=key, secret=secret)
    response.headers["Cache-Control"] = "no-store"
    return response


@page()
async def key_edit(ctx: Ctx) -> Response:
    key = await keys.get_key(ctx.admin, ctx.path_int("key_id"), owner=ctx.user.id)
    if ctx.request.method == "GET":
        return ctx.render("key_form.html", key=key, groups=(key.group,), values={}, error=None)
    try:
        after = await keys.update_key(ctx.admin, key.id, owner=ctx.user.id, **_limits(ctx))
        await ctx.audit("key.update", f"key {key.id}", key, after)
    except ValueError as exc:
        return ctx.render("key_form.html", status=400, key=key, groups=(key.group,), values=dict(ctx.form), error=str(exc))
    return ctx.redirect("/keys", "saved")


@page()
async def key_enable(ctx: Ctx) -> Response:
    try:
        await _switch(ctx, True)
    except Locked:
        return ctx.redirect("/keys", "locked")
    return ctx.redirect("/keys", "enabled")


@page()
async def key_disable(ctx: Ctx) -> Response:
    await _switch(ctx, False)
    return ctx.redirect("/keys", "disabled")


@page()
async def key_delete(ctx: Ctx) -> Response:
    before = await keys.get_key(ctx.admin, ctx.path_int("key_id"), owner=ctx.user.id)
    after = await keys.delete_key(ctx.admin, before.id, owner=ctx.user.id)
    await ctx.audit("key.delete", f"key {before.id}", before, after)
    return ctx.redirect("/keys", "deleted")


async def _switch(ctx: Ctx, enabled: bool) -> None:
    before = await keys.get_key(ctx.admin, ctx.path_int("key_id"), owner=ctx.user.id)
    after = await keys.set_key_enabled(ctx.admin, before.id, enabled, owner=ctx.user.id)
    await ctx.audit("key.enable" if enabled else "key.disable", f"key {before.id}", before, after)
