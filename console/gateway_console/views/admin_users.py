"""Operator pages for users: list, create, top up (with a note), open groups,
enable/disable, set a password."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import AdminError, groups, keys, users, wallet

from ..forms import FormError, optional_usd, split_list, text
from ..web import Ctx, page


async def _list_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    listed = await users.list_users(ctx.admin)
    names = [group.name for group in await groups.list_groups(ctx.admin)]
    values = dict(ctx.form) if error else {}
    return ctx.render("admin_users.html", status=status, users=listed, groups=names, error=error, values=values)


@page(admin=True)
async def user_list(ctx: Ctx) -> Response:
    return await _list_page(ctx)


@page(admin=True)
async def user_create(ctx: Ctx) -> Response:
    form = ctx.form
    try:
        name = text(form, "name", required="Give the user a name.", max_length=200)
        password = str(form.get("password") or "") or None
        if password is not None:
            users.check_password(password)
        groups_opened = split_list(text(form, "groups")) or ["default"]
        is_admin = form.get("is_admin") == "on"
        created = await users.create_user(ctx.admin, name, is_admin=is_admin, password=password, groups=groups_opened)
    except (ValueError, AdminError) as exc:  # FormError, Invalid, Conflict
        return await _list_page(ctx, 400, str(exc))
    await ctx.audit("user.create", f"user {created.id}", None, created)
    return ctx.redirect("/admin/users", "created")


async def _user_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    user_id = ctx.path_int("user_id")
    found = await wallet.wallet(ctx.admin, user_id, limit=10)
    return ctx.render(
        "admin_user.html", status=status, error=error, user=found.user, ledger=found.ledger,
        keys=await keys.list_keys(ctx.admin, user_id),
        all_groups=[group.name for group in await groups.list_groups(ctx.admin)],
    )  # fmt: skip


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
        before = await users.get_user(ctx.admin, user_id)
        note = text(ctx.form, "note", max_length=500) or None
        await wallet.topup(ctx.admin, user_id, amount, note)
    except ValueError as exc:
        return await _user_page(ctx, 400, str(exc))
    after = await users.get_user(ctx.admin, user_id)
    await ctx.audit("wallet.topup", f"user {user_id}", before, after)  # the balance before and after; the ledger row has the note
    return ctx.redirect(f"/admin/users/{user_id}", "topped-up")


@page(admin=True)
async def user_groups(ctx: Ctx) -> Response:
    user_id = ctx.path_int("user_id")
    try:
        opened, closed = split_list(text(ctx.form, "open")), split_list(text(ctx.form, "close"))
        before = await users.get_user(ctx.admin, user_id)
        after = await users.change_groups(ctx.admin, user_id, opened=opened, closed=closed)
    except ValueError as exc:
        return await _user_page(ctx, 400, str(exc))
    await ctx.audit("user.update", f"user {user_id}", before, after)
    return ctx.redirect(f"/admin/users/{user_id}", "saved")


@page(admin=True)
async def user_enable(ctx: Ctx) -> Response:
    before = await users.get_user(ctx.admin, ctx.path_int("user_id"))
    after = await users.set_user_enabled(ctx.admin, before.id, True, by=ctx.user.id)
    await ctx.audit("user.enable", f"user {before.id}", before, after)
    return ctx.redirect(f"/admin/users/{ctx.path_int('user_id')}", "enabled")


@page(admin=True)
async def user_disable(ctx: Ctx) -> Response:
    try:
        before = await users.get_user(ctx.admin, ctx.path_int("user_id"))
        after = await users.set_user_enabled(ctx.admin, before.id, False, by=ctx.user.id)
    except ValueError as exc:  # Invalid: not oneself
        return await _user_page(ctx, 400, str(exc))
    await ctx.audit("user.disable", f"user {before.id}", before, after)
    return ctx.redirect(f"/admin/users/{ctx.path_int('user_id')}", "disabled")


@page(admin=True)
async def user_password(ctx: Ctx) -> Response:
    try:
        await users.set_password(ctx.admin, ctx.path_int("user_id"), str(ctx.form.get("password") or ""))
    except ValueError as exc:  # Invalid: too short
        return await _user_page(ctx, 400, str(exc))
    await ctx.audit("user.password", f"user {ctx.path_int('user_id')}", None, {"password": "changed"})
    return ctx.redirect(f"/admin/users/{ctx.path_int('user_id')}", "password")
