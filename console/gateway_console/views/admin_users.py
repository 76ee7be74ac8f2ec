"""Operator pages for users: list (searched, in pages; the sign-ups waiting for
approval above: :mod:`.admin_signups`), create, top up (with a
note), open groups (checkboxes of the existing groups), budgets of the user and
of each key, enable/disable, set a password, delete."""

from __future__ import annotations

from starlette.responses import Response

from urllib.parse import urlencode

from gateway_core.admin import AdminError, budgets, groups, keys, signups, users, wallet
from gateway_core.records import BUDGET_COLUMNS, UserRecord

from ..i18n import _
from ..forms import FormError, budget_changes, optional_usd, text
from ..web import Ctx, page

PAGE_SIZE = 50
PERIODS = ("daily", "weekly", "monthly")  # in the order of BUDGET_COLUMNS


async def users_page(ctx: Ctx, status: int = 200, error: str | None = None, *, signup_error: str | None = None) -> Response:
    """The users page, with the sign-ups waiting for approval above; ``error``: the
    create form's message, ``signup_error``: a sign-up's."""
    query = ctx.request.query_params
    search = query.get("q", "").strip()[:200]
    after = int(query["after"]) if query.get("after", "").isdigit() else 0
    listed, more = await users.search_users(ctx.admin, query=search, after_id=after, limit=PAGE_SIZE)
    names = [group.name for group in await groups.list_groups(ctx.admin)]
    values = {name: str(value) for name, value in ctx.form.items()} if error else {}
    chosen = ctx.form.getlist("groups") if error else ["default"]
    more_link = ctx.url("/admin/users?" + urlencode({**({"q": search} if search else {}), "after": listed[-1].user.id})) if more and listed else None
    return ctx.render(
        "admin_users.html", status=status, users=listed, groups=names, error=error, values=values, chosen=chosen,
        search=search, more=more_link, paged=after > 0, pending=await signups.list_signups(ctx.admin, caller=ctx.user),
        signup_error=signup_error,
    )  # fmt: skip


@page(admin=True)
async def user_list(ctx: Ctx) -> Response:
    return await users_page(ctx)


@page(admin=True)
async def user_create(ctx: Ctx) -> Response:
    form = ctx.form
    try:
        name = text(form, "name", required=_("Give the user a name."), max_length=200)
        password = str(form.get("password") or "") or None
        if password is not None:
            users.check_password(password)
        groups_opened = [str(name) for name in form.getlist("groups")]
        if not groups_opened:
            raise FormError(_("Open at least one group to the user."))
        is_admin = form.get("is_admin") == "on"
        created = await users.create_user(ctx.admin, name, is_admin=is_admin, password=password, groups=groups_opened)
    except (ValueError, AdminError) as exc:  # FormError, Invalid, Conflict
        return await users_page(ctx, 400, str(exc))
    await ctx.audit("user.create", f"user {created.id}", None, created)
    return ctx.redirect("/admin/users", "created")


async def _user_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    user_id = ctx.path_int("user_id")
    found = await wallet.wallet(ctx.admin, user_id, limit=10)
    config = ctx.services.config
    caps = await budgets.budget_status(ctx.admin, user_id, timezone=config.budget_timezone, window=config.budget_window)
    user_budgets = await _user_budgets(ctx, found.user)
    return ctx.render(
        "admin_user.html", status=status, error=error, user=found.user, ledger=found.ledger,
        keys=await keys.list_keys(ctx.admin, user_id, include_deleted=True), budgets=caps, user_budgets=user_budgets, periods=PERIODS,
        all_groups=[group.name for group in await groups.list_groups(ctx.admin)],
    )  # fmt: skip


async def _user_budgets(ctx: Ctx, user: UserRecord) -> dict[str, int | None]:
    """The user's own caps by period as stored (no change asked: the CLI's ``user limits USER``)."""
    stored = await users.set_user_limits(ctx.admin, user, {})
    return {period: stored.get(column) for period, column in zip(PERIODS, BUDGET_COLUMNS)}


def _budget_changes(ctx: Ctx) -> dict[str, int | None]:
    """``daily``, ``weekly``, ``monthly`` caps in USD from the form (empty: none)."""
    return budget_changes(ctx.form)


@page(admin=True)
async def user_budgets(ctx: Ctx) -> Response:
    user_id = ctx.path_int("user_id")
    try:
        before = await users.get_user(ctx.admin, user_id)
        stored = await users.set_user_limits(ctx.admin, before, _budget_changes(ctx))
    except ValueError as exc:
        return await _user_page(ctx, 400, str(exc))
    await ctx.audit("user.limits", f"user {user_id}", None, stored)
    return ctx.redirect(f"/admin/users/{user_id}", "saved")


@page(admin=True)
async def key_budgets(ctx: Ctx) -> Response:
    """An operator's caps on one of the user's keys (locked against its owner, as in the CLI)."""
    user_id = ctx.path_int("user_id")
    try:
        before = await keys.get_key(ctx.admin, ctx.path_int("key_id"))
        if before.user_id != user_id:
            raise FormError(_("That key is not this user's."))
        after, _changed = await keys.set_key_limits(ctx.admin, before.id, _budget_changes(ctx))
    except ValueError as exc:
        return await _user_page(ctx, 400, str(exc))
    await ctx.audit("key.limits", f"key {before.id}", before, after)
    return ctx.redirect(f"/admin/users/{user_id}", "saved")


@page(admin=True)
async def user_detail(ctx: Ctx) -> Response:
    return await _user_page(ctx)


@page(admin=True)
async def user_topup(ctx: Ctx) -> Response:
    user_id = ctx.path_int("user_id")
    try:
        amount = optional_usd(text(ctx.form, "amount"), _("Amount"))
        if not amount:
            raise FormError(_("Enter an amount of USD above zero, like 10 or 2.50."))
        before = await users.get_user(ctx.admin, user_id)
        note = text(ctx.form, "note", max_length=500, label=_("The note")) or None
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
        before = await users.get_user(ctx.admin, user_id)
        known = {group.name for group in await groups.list_groups(ctx.admin)}
        wanted = [str(name) for name in ctx.form.getlist("groups")]
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise FormError(_("No group is named %(names)s: create it on the Groups page first.", names=", ".join(unknown)))
        opened = [name for name in wanted if name not in before.groups]
        closed = [name for name in before.groups if name not in wanted]
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


@page(admin=True)
async def user_delete(ctx: Ctx) -> Response:
    """Delete a user for good (``relaygate user delete``): keys deleted, tokens revoked,
    sessions ended; the ledger and the usage log stay. Not oneself."""
    try:
        before = await users.get_user(ctx.admin, ctx.path_int("user_id"))
        after = await users.delete_user(ctx.admin, before.id, by=ctx.user.id)
    except ValueError as exc:  # Invalid: oneself, or deleted already
        return await _user_page(ctx, 400, str(exc))
    await ctx.audit("user.delete", f"user {before.id}", before, after)
    return ctx.redirect("/admin/users", "deleted")
