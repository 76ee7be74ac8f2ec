"""Operator pages for channels: list with health (traffic, circuit breakers, disabled
keys), add, edit, test, enable/disable, delete — the admin layer's channel
operations, the ones ``relaygate channel`` runs. Upstream keys are shown masked
only, and kept when an edit leaves them blank."""

from __future__ import annotations

import time
from typing import Any

from starlette.responses import Response

from gateway_core.admin import AdminError, channels
from gateway_core.records import ChannelRecord

from ..forms import FormError, model_map, optional_int, split_list, text
from ..web import Ctx, page

HEALTH_WINDOW = 24 * 3600


async def _list_page(ctx: Ctx, probe: tuple[ChannelRecord, channels.ProbeResult] | None = None) -> Response:
    """Channels, their traffic over 24 h, and their breakers and keys."""
    statuses = await channels.channel_statuses(ctx.admin, in_flight=ctx.services.health.in_flight())
    traffic = await channels.channel_traffic(ctx.admin, time.time() - HEALTH_WINDOW)
    breakers = {status.channel.id: status.health for status in statuses}
    listed = [status.channel for status in statuses]
    return ctx.render("admin_channels.html", channels=listed, health=traffic, breakers=breakers, probe=probe)


@page(admin=True)
async def channel_list(ctx: Ctx) -> Response:
    return await _list_page(ctx)


def _fields(ctx: Ctx, existing: ChannelRecord | None) -> dict[str, Any]:
    """The form's fields; the admin layer validates them."""
    form = ctx.form
    keys = [line.strip() for line in str(form.get("api_keys") or "").splitlines() if line.strip()]
    fields = {
        "name": text(form, "name", required="Give the channel a name.", max_length=100),
        "type": text(form, "type", required="Choose a channel type."),
        "base_url": text(form, "base_url", max_length=2000),
        "models": split_list(text(form, "models", max_length=20_000)),
        "model_map": model_map(text(form, "model_map", max_length=20_000)),
        "groups": split_list(text(form, "groups")) or ["default"],
        "priority": optional_int(text(form, "priority"), "Priority") or 0,
        "weight": optional_int(text(form, "weight"), "Weight") if text(form, "weight") else 1,
        "enabled": form.get("enabled") == "on",
    }
    if not fields["models"]:
        raise FormError("List the models the channel serves.")
    if keys or existing is None:
        fields["api_keys"] = keys
    return fields


def _form(ctx: Ctx, channel: ChannelRecord | None, status: int = 200, error: str | None = None) -> Response:
    types = sorted(ctx.admin.channel_types)
    values = dict(ctx.form) if error else {}
    return ctx.render("admin_channel_form.html", status=status, channel=channel, types=types, values=values, error=error)


@page(admin=True)
async def channel_new(ctx: Ctx) -> Response:
    if ctx.request.method == "GET":
        return _form(ctx, None)
    try:
        await channels.add_channel(ctx.admin, _fields(ctx, None))
    except (ValueError, AdminError) as exc:  # FormError, Invalid, Conflict
        return _form(ctx, None, 400, str(exc))
    return ctx.redirect("/admin/channels", "created")


@page(admin=True)
async def channel_edit(ctx: Ctx) -> Response:
    channel = await channels.get_channel(ctx.admin, ctx.path_int("channel_id"))
    if ctx.request.method == "GET":
        return _form(ctx, channel)
    try:
        await channels.update_channel(ctx.admin, channel.id, _fields(ctx, channel))
    except (ValueError, AdminError) as exc:
        return _form(ctx, channel, 400, str(exc))
    return ctx.redirect("/admin/channels", "saved")


@page(admin=True)
async def channel_enable(ctx: Ctx) -> Response:
    await channels.enable_channel(ctx.admin, ctx.path_int("channel_id"))
    return ctx.redirect("/admin/channels", "enabled")


@page(admin=True)
async def channel_disable(ctx: Ctx) -> Response:
    await channels.disable_channel(ctx.admin, ctx.path_int("channel_id"))
    return ctx.redirect("/admin/channels", "disabled")


@page(admin=True)
async def channel_delete(ctx: Ctx) -> Response:
    await channels.delete_channel(ctx.admin, ctx.path_int("channel_id"))
    return ctx.redirect("/admin/channels", "deleted")


@page(admin=True)
async def channel_probe(ctx: Ctx) -> Response:
    services = ctx.services
    probe = await channels.test_channel(
        ctx.admin, ctx.path_int("channel_id"), timeouts=services.config.timeouts, session=services.session,
        request_id=ctx.request.scope.get("relaygate.request_id", "console-test"), model=text(ctx.form, "model") or None,
    )  # fmt: skip
    return await _list_page(ctx, probe)
