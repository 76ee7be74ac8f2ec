"""An operator on any user's keys, from the user's page: edit (name, quota, expiry,
models, allowed networks, rate limits), enable/disable, delete. The operator acts
with ``owner=None``, as ``relaygate key`` does: what an operator sets is locked
against the key's owner. The form is the user's own key form (:mod:`.keys`)."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import NotFound, keys
from gateway_core.records import KeyRecord

from .keys import _form, _limits, _rate_limits
from ..web import Ctx, page


async def _users_key(ctx: Ctx) -> KeyRecord:
    """The key of the path, if it is the path's user's (deleted ones too)."""
    user_id, key_id = ctx.path_int("user_id"), ctx.path_int("key_id")
    key = await keys.get_key(ctx.admin, key_id)
    if key.user_id != user_id:
        raise NotFound(f"no API key with id {key_id} of user {user_id}")
    return key


def _user_page(key: KeyRecord) -> str:
    return f"/admin/users/{key.user_id}"


@page(admin=True)
async def key_edit(ctx: Ctx) -> Response:
    key = await _users_key(ctx)
    action, back = f"/admin/users/{key.user_id}/keys/{key.id}/edit", _user_page(key)
    if ctx.request.method == "GET":
        return _form(ctx, key, (key.group,), action=action, back=back)
    try:
        fields = await _limits(ctx, key)
        after = await keys.update_key(ctx.admin, key.id, limits=_rate_limits(ctx), **fields)
    except ValueError as exc:  # FormError, Invalid
        return _form(ctx, key, (key.group,), 400, str(exc), action=action, back=back)
    await ctx.audit("key.update", f"key {key.id}", key, after)
    return ctx.redirect(back, "saved")


@page(admin=True)
async def key_enable(ctx: Ctx) -> Response:
    return await _switch(ctx, True)


@page(admin=True)
async def key_disable(ctx: Ctx) -> Response:
    return await _switch(ctx, False)


async def _switch(ctx: Ctx, enabled: bool) -> Response:
    before = await _users_key(ctx)
    after = await keys.set_key_enabled(ctx.admin, before.id, enabled)
    await ctx.audit("key.enable" if enabled else "key.disable", f"key {before.id}", before, after)
    return ctx.redirect(_user_page(before), "enabled" if enabled else "disabled")


@page(admin=True)
async def key_delete(ctx: Ctx) -> Response:
    before = await _users_key(ctx)
    after = await keys.delete_key(ctx.admin, before.id)
    await ctx.audit("key.delete", f"key {before.id}", before, after)
    return ctx.redirect(_user_page(before), "deleted")
