"""A user's API keys: list, create (the secret shown once), edit limits,
enable/disable, delete. Every route by id acts as the key's owner: another
user's key is not found.

A new key's secret goes from the form's POST to ``/keys/{id}/created`` by
post/redirect/get (:meth:`..web.Ctx.reveal_once`): reloading that page shows
that the secret was shown already and creates nothing."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from gateway_core.admin import Locked, keys, users
from gateway_core.admin.rules import parse_budget, parse_rate_limit
from gateway_core.records import LIMIT_COLUMNS, KeyRecord

from ..i18n import N_, _
from ..forms import FormError, future_time, split_list, text
from ..web import Ctx, page

NAME_LENGTH = 100
LIMIT_LABELS = {"rpm": N_("Requests per minute"), "tpm": N_("Tokens per minute"), "concurrency": N_("Requests at once")}


@page()
async def key_list(ctx: Ctx) -> Response:
    listed = await keys.list_keys(ctx.admin, ctx.user.id)
    user = await users.get_user(ctx.admin, ctx.user.id)
    return ctx.render("keys.html", keys=listed, groups=user.groups)


async def _limits(ctx: Ctx, key: KeyRecord | None) -> dict[str, Any]:
    """The key's fields from the form (the admin layer refuses models the group does
    not serve); an expiry already past is refused (it would cut a live key's
    traffic at once)."""
    form = ctx.form
    models = split_list(text(form, "models", max_length=5000, label=_("The model list")))
    return {
        "name": text(form, "name", required=_("Give the key a name."), max_length=NAME_LENGTH, label=_("The name")),
        "quota_micros": parse_budget(text(form, "quota", max_length=40).lstrip("$").strip(), "quota"),  # the CLI's and the API's rule and words
        "expires_at": future_time(text(form, "expires"), _("The expiry"), kept=key.expires_at if key else None),
        "models": models,
        "allow_ips": split_list(text(form, "allow_ips", max_length=5000, label=_("The IP allow list"))),
    }


def _rate_limits(ctx: Ctx) -> dict[str, int | None]:
    """``rpm``, ``tpm``, ``concurrency`` from the form (empty or 0: no limit of the key's own),
    read by the admin layer's rule: a wrong one has the CLI's and the API's message."""
    return {column: parse_rate_limit(text(ctx.form, column, max_length=20), column) or None for column in LIMIT_COLUMNS}


def _form(
    ctx: Ctx, key: KeyRecord | None, groups: Any, status: int = 200, error: str | None = None, *, action: str | None = None, back: str = "/keys"
) -> Response:
    """The key form; ``action`` and ``back`` (Cancel) are the operator's paths when
    an admin edits another user's key (:mod:`.admin_keys`)."""
    values = {name: str(value) for name, value in ctx.form.items()} if error else {}
    action = action or (f"/keys/{key.id}/edit" if key else "/keys/new")
    return ctx.render(
        "key_form.html", status=status, key=key, groups=groups, values=values, error=error, limit_labels=LIMIT_LABELS,
        name_length=NAME_LENGTH, action=action, back=back,
    )  # fmt: skip


@page()
async def key_new(ctx: Ctx) -> Response:
    groups = (await users.get_user(ctx.admin, ctx.user.id)).groups
    if ctx.request.method == "GET":
        return _form(ctx, None, groups)
    try:
        group = text(ctx.form, "group") or None
        fields = await _limits(ctx, None)
        limits = _rate_limits(ctx)
        key, secret = await keys.create_key(ctx.admin, ctx.user.id, group=group, owner=ctx.user.id, limits=limits, **fields)
        await ctx.audit("key.create", f"key {key.id}", None, key)
    except ValueError as exc:  # FormError, Invalid
        return _form(ctx, None, groups, 400, str(exc))
    return ctx.reveal_once(f"/keys/{key.id}/created", secret)


@page()
async def key_created(ctx: Ctx) -> Response:
    """The new key's secret, shown once; after that, what to do without it."""
    key = await keys.get_key(ctx.admin, ctx.path_int("key_id"), owner=ctx.user.id)
    path = f"/keys/{key.id}/created"
    return ctx.shown_once(ctx.render("key_created.html", key=key, secret=ctx.revealed(path)), path)


@page()
async def key_edit(ctx: Ctx) -> Response:
    key = await keys.get_key(ctx.admin, ctx.path_int("key_id"), owner=ctx.user.id)
    if ctx.request.method == "GET":
        return _form(ctx, key, (key.group,))
    try:
        fields = await _limits(ctx, key)
        limits = _rate_limits(ctx)
        after = await keys.update_key(ctx.admin, key.id, owner=ctx.user.id, **fields)
        if limits != _stored_limits(key):
            after = await keys.set_own_key_limits(ctx.admin, key.id, limits, owner=ctx.user.id)
        await ctx.audit("key.update", f"key {key.id}", key, after)
    except ValueError as exc:
        return _form(ctx, key, (key.group,), 400, str(exc))
    return ctx.redirect("/keys", "saved")


def _stored_limits(key: KeyRecord) -> dict[str, int | None]:
    limits = key.limits
    stored = {"rpm": limits.requests_per_minute, "tpm": limits.tokens_per_minute, "concurrency": limits.concurrency}
    return {column: value or None for column, value in stored.items()}


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
