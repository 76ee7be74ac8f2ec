"""Operator pages for users: list, create, top up (with a note), open groups,
enable/disable, set a password."""

from __future__ import annotations

import asyncio
import sqlite3

from starlette.responses import Response

from gateway_core.secrets import hash_password
from gateway_core.store.groups import group_ratios
from gateway_core.store.keys import list_keys
from gateway_core.store.users import add_user, get_user_by_id, open_groups, set_password_hash, set_user_enabled
from gateway_core.store.wallet import list_ledger, topup

from .. import queries
from ..forms import FormError, optional_usd, split_list, text
from ..web import Ctx, page

MIN_PASSWORD = 8


def _users_and_groups(conn: sqlite3.Connection) -> tuple[list, list[str]]:
    return queries.list_users(conn), list(group_ratios(conn))


@page(admin=True)
async def user_list(ctx: Ctx) -> Response:
    users, groups = await ctx.read(_users_and_groups)
    return ctx.render("admin_users.html", users=users, groups=groups, error=None, values={})


@page(admin=True)
async def user_create(ctx: Ctx) -> Response:
    form = ctx.form
    try:
        name = text(form, "name", required="Give the user a name.", max_length=200)
        password = str(form.get("password") or "")
        if password and len(password) < MIN_PASSWORD:
            raise FormError(f"A password needs {MIN_PASSWORD} characters or more (or leave it empty: no console access).")
        groups = split_list(text(form, "groups")) or ["default"]
        password_hash = await asyncio.to_thread(hash_password, password) if password else None
        is_admin = form.get("is_admin") == "on"
        await ctx.write(lambda conn: add_user(conn, name, is_admin=is_admin, password_hash=password_hash, groups=groups))
    except sqlite3.IntegrityError:
        return await _list_with_error(ctx, "A user with that name exists already.")
    except ValueError as exc:
        return await _list_with_error(ctx, str(exc))
    return ctx.redirect("/admin/users", "created")


async def _list_with_error(ctx: Ctx, error: str) -> Response:
    users, groups = await ctx.read(_users_and_groups)
    return ctx.render("admin_users.html", status=400, users=users, groups=groups, error=error, values=dict(ctx.form))


def _detail(conn: sqlite3.Connection, user_id: int) -> dict | None:
    user = get_user_by_id(conn, user_id)
    if user is None:
        return None
    return {
        "user": user,
        "keys": list_keys(conn, user_id),
        "ledger": list_ledger(conn, user_id, limit=10),
        "all_groups": list(group_ratios(conn)),
    }


async def _user_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    data = await ctx.read(_detail, ctx.path_int("user_id"))
    if data is None:
        return ctx.not_found("user")
    return ctx.render("admin_user.html", status=status, error=error, **data)


@page(admin=True)
async def user_detail(ctx: Ctx) -> Response:
    return await _user_page(ctx)


@page(admin=True)
async def user_topup(ctx: Ctx) -> Response:
    user_id = ctx.path_int("user_id")
    try:
        amount = optional_usd(text(ctx.form, "amount"), "Amount")
        if not amount:
            raise FormError("Enter an amount of USD above zero, like 10 or 2.50.")
        note = text(ctx.form, "note", max_length=500) or None
        await ctx.write(topup, user_id, amount, note)
    except ValueError as exc:
        return await _user_page(ctx, 400, str(exc))
    return ctx.redirect(f"/admin/users/{user_id}", "topped-up")


@page(admin=True)
async def user_groups(ctx: Ctx) -> Response:
    user_id = ctx.path_int("user_id")
    try:
        opened = split_list(text(ctx.form, "open"))
        closed = split_list(text(ctx.form, "close"))

        def change(conn: sqlite3.Connection) -> bool:
            if get_user_by_id(conn, user_id) is None:
                return False
            if opened:
                open_groups(conn, user_id, opened)
            for group in closed:
                queries.close_group(conn, user_id, group)
            return True

        if not await ctx.write(change):
            return ctx.not_found("user")
    except ValueError as exc:
        return await _user_page(ctx, 400, str(exc))
    return ctx.redirect(f"/admin/users/{user_id}", "saved")


def _enabled(enabled: bool):
    @page(admin=True)
    async def switch(ctx: Ctx) -> Response:
        user_id = ctx.path_int("user_id")
        if user_id == ctx.user.id and not enabled:
            return await _user_page(ctx, 400, "You cannot disable yourself.")
        if not await ctx.write(set_user_enabled, user_id, enabled):
            return ctx.not_found("user")
        ctx.services.keys.invalidate()  # every cached key carries its owner's state
        return ctx.redirect(f"/admin/users/{user_id}", "enabled" if enabled else "disabled")

    switch.__name__ = "user_enable" if enabled else "user_disable"
    return switch


user_enable = _enabled(True)
user_disable = _enabled(False)


@page(admin=True)
async def user_password(ctx: Ctx) -> Response:
    user_id = ctx.path_int("user_id")
    password = str(ctx.form.get("password") or "")
    if len(password) < MIN_PASSWORD:
        return await _user_page(ctx, 400, f"A password needs {MIN_PASSWORD} characters or more.")
    password_hash = await asyncio.to_thread(hash_password, password)
    if not await ctx.write(set_password_hash, user_id, password_hash):
        return ctx.not_found("user")
    return ctx.redirect(f"/admin/users/{user_id}", "password")
