"""A user's API keys: list, create (the secret shown once), edit limits,
enable/disable, delete. Every route by id checks the key is the viewer's own."""

from __future__ import annotations

import sqlite3
from typing import Any

from starlette.responses import Response

from gateway_core.store.keys import create_key, get_key, list_keys
from gateway_core.store.users import user_groups

from .. import queries
from ..forms import FormError, optional_usd, split_list, text, when
from ..web import Ctx, page


def _keys_and_groups(conn: sqlite3.Connection, user_id: int) -> tuple[list, tuple[str, ...]]:
    return list_keys(conn, user_id), user_groups(conn, user_id)


@page()
async def key_list(ctx: Ctx) -> Response:
    keys, groups = await ctx.read(_keys_and_groups, ctx.user.id)
    return ctx.render("keys.html", keys=keys, groups=groups)


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
    groups = await ctx.read(user_groups, ctx.user.id)
    if ctx.request.method == "GET":
        return ctx.render("key_form.html", key=None, groups=groups, values={}, error=None)
    try:
        fields = _limits(ctx)
        group = text(ctx.form, "group") or (groups[0] if groups else "")
        if group not in groups:
            raise FormError(f"The group {group!r} is not open to you.")
        key_id, secret = await ctx.write(lambda conn: create_key(conn, ctx.user.id, group=group, **fields))
    except ValueError as exc:  # FormError too
        return ctx.render("key_form.html", status=400, key=None, groups=groups, values=dict(ctx.form), error=str(exc))
    key = await ctx.read(get_key, key_id)
    response = ctx.render("key_created.html", key=key, secret=secret)
    response.headers["Cache-Control"] = "no-store"
    return response


async def _own_key(ctx: Ctx):
    key = await ctx.read(get_key, ctx.path_int("key_id"))
    if key is None or key.user_id != ctx.user.id or key.deleted:
        return None
    return key


@page()
async def key_edit(ctx: Ctx) -> Response:
    key = await _own_key(ctx)
    if key is None:
        return ctx.not_found("key")
    if ctx.request.method == "GET":
        return ctx.render("key_form.html", key=key, groups=(key.group,), values={}, error=None)
    try:
        fields = _limits(ctx)
        key_hash = await ctx.write(lambda conn: queries.update_key(conn, ctx.user.id, key.id, **fields))
    except ValueError as exc:
        return ctx.render("key_form.html", status=400, key=key, groups=(key.group,), values=dict(ctx.form), error=str(exc))
    if key_hash is None:
        return ctx.not_found("key")
    ctx.services.keys.invalidate(key_hash)
    return ctx.redirect("/keys", "saved")


def _state_change(action: str, done: str):
    @page()
    async def change(ctx: Ctx) -> Response:
        key_hash = await ctx.write(queries.change_key_state, ctx.user.id, ctx.path_int("key_id"), action)
        if key_hash is None:
            return ctx.not_found("key")
        ctx.services.keys.invalidate(key_hash)
        return ctx.redirect("/keys", done)

    change.__name__ = f"key_{action}"
    return change


key_enable = _state_change("enable", "enabled")
key_disable = _state_change("disable", "disabled")
key_delete = _state_change("delete", "deleted")
