"""Operator pages for channels: list with health (traffic, circuit breakers, disabled
keys), add, edit, test, enable/disable, delete — the admin layer's channel
operations, the ones ``relaygate channel`` runs. Upstream keys are shown masked
only, and kept when an edit leaves them blank; header values likewise, kept while
their line shows them masked. The form draws each channel type's settings from its
schema (:mod:`..channel_form`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from starlette.responses import Response

from gateway_core.admin import AdminError, channels
from gateway_core.admin.rules import parse_channel_number
from gateway_core.records import ChannelRecord

from ..channel_form import headers_from_text, headers_text, setting_groups, settings_from_form
from ..i18n import N_, _
from ..forms import FormError, model_map, optional_float, split_list, text
from ..web import Ctx, page

HEALTH_WINDOW = 24 * 3600
TIMEOUTS = {"timeout_connect": N_("Connect timeout"), "timeout_first_byte": N_("First-byte timeout"), "timeout_idle": N_("Idle timeout")}


Probe = tuple[ChannelRecord, "channels.ProbeResult"]


async def _list_page(ctx: Ctx, probe: Probe | None = None, probes: list[Probe] | None = None, status: int = 200, error: str | None = None) -> Response:
    """Channels, their traffic over 24 h, and their breakers and keys."""
    shared = ctx.services.health.shared  # with Redis: every worker's and replica's requests
    in_flight = await shared.in_flight() if shared is not None else ctx.services.health.in_flight()
    statuses = await channels.channel_statuses(ctx.admin, in_flight=in_flight)
    traffic = await channels.channel_traffic(ctx.admin, time.time() - HEALTH_WINDOW)
    breakers = {status.channel.id: status.health for status in statuses}
    listed = [status.channel for status in statuses]
    return ctx.render(
        "admin_channels.html", status=status, error=error, channels=listed, health=traffic, breakers=breakers, probe=probe, probes=probes,
    )  # fmt: skip


@page(admin=True)
async def channel_list(ctx: Ctx) -> Response:
    return await _list_page(ctx)


def _fields(ctx: Ctx, existing: ChannelRecord | None) -> dict[str, Any]:
    """The form's fields; the admin layer validates them."""
    form = ctx.form
    keys = [line.strip() for line in str(form.get("api_keys") or "").splitlines() if line.strip()]
    # the admin layer's rule and words, as the CLI's and the API's (empty: the default)
    priority, weight, concurrency = (parse_channel_number(text(form, name, max_length=40), name) for name in ("priority", "weight", "concurrency"))
    fields = {
        "name": text(form, "name", required=_("Give the channel a name."), max_length=100, label=_("The name")),
        "type": text(form, "type", required=_("Choose a channel type.")),
        "base_url": text(form, "base_url", max_length=2000, label=_("The base URL")),
        "models": split_list(text(form, "models", max_length=20_000)),
        "model_map": model_map(text(form, "model_map", max_length=20_000)),
        "groups": split_list(text(form, "groups")) or ["default"],
        "priority": priority or 0,
        "weight": 1 if weight is None else weight,
        "enabled": form.get("enabled") == "on",
    }
    if not fields["models"]:
        raise FormError(_("List the models the channel serves."))
    if keys or existing is None:
        fields["api_keys"] = keys
    fields["concurrency"] = concurrency or 0
    for name, what in TIMEOUTS.items():
        fields[name] = optional_float(text(form, name), _(what))
    fields["headers"] = headers_from_text(str(form.get("headers") or ""), existing.headers if existing else {})
    channel_type = ctx.admin.channel_types.get(str(fields["type"]))
    if channel_type is not None:  # a type not loaded keeps its stored settings
        fields["settings"] = settings_from_form(form, channel_type)
    return fields


def _form(ctx: Ctx, channel: ChannelRecord | None, status: int = 200, error: str | None = None) -> Response:
    """The form: empty, the channel's, or (after an error) as it was posted."""
    loaded = ctx.admin.channel_types
    types = sorted({*loaded, *([channel.type] if channel else [])})
    values = {name: str(value) for name, value in ctx.form.items()} if error else {}
    return ctx.render(
        "admin_channel_form.html", status=status, channel=channel, types=types, loaded=loaded, values=values, error=error,
        settings=setting_groups(loaded, channel, values if error else None), timeouts=_timeouts(ctx),
        headers=headers_text(channel.headers) if channel else "",
    )  # fmt: skip


def _timeouts(ctx: Ctx) -> list[tuple[str, str, float]]:
    """Each timeout field: its name, its label, the gateway's default."""
    defaults = ctx.services.config.timeouts
    return [(name, _(what), getattr(defaults, name.removeprefix("timeout_"))) for name, what in TIMEOUTS.items()]


@page(admin=True)
async def channel_new(ctx: Ctx) -> Response:
    if ctx.request.method == "GET":
        return _form(ctx, None)
    try:
        added = await channels.add_channel(ctx.admin, _fields(ctx, None))
    except (ValueError, AdminError) as exc:  # FormError, Invalid, Conflict
        return _form(ctx, None, 400, str(exc))
    await ctx.audit("channel.create", f"channel {added.id}", None, added)
    return ctx.redirect("/admin/channels", "created")


@page(admin=True)
async def channel_edit(ctx: Ctx) -> Response:
    channel = await channels.get_channel(ctx.admin, ctx.path_int("channel_id"))
    if ctx.request.method == "GET":
        return _form(ctx, channel)
    try:
        after = await channels.update_channel(ctx.admin, channel.id, _fields(ctx, channel))
    except (ValueError, AdminError) as exc:
        return _form(ctx, channel, 400, str(exc))
    await ctx.audit("channel.update", f"channel {channel.id}", channel, after)
    return ctx.redirect("/admin/channels", "saved")


@page(admin=True)
async def channel_enable(ctx: Ctx) -> Response:
    before = await channels.get_channel(ctx.admin, ctx.path_int("channel_id"))
    after, _changed = await channels.enable_channel(ctx.admin, before.id)
    await ctx.audit("channel.enable", f"channel {before.id}", before, after)
    return ctx.redirect("/admin/channels", "enabled")


@page(admin=True)
async def channel_disable(ctx: Ctx) -> Response:
    before = await channels.get_channel(ctx.admin, ctx.path_int("channel_id"))
    after = await channels.disable_channel(ctx.admin, before.id)
    await ctx.audit("channel.disable", f"channel {before.id}", before, after)
    return ctx.redirect("/admin/channels", "disabled")


@page(admin=True)
async def channel_delete(ctx: Ctx) -> Response:
    before = await channels.delete_channel(ctx.admin, ctx.path_int("channel_id"))
    await ctx.audit("channel.delete", f"channel {before.id}", before, None)
    return ctx.redirect("/admin/channels", "deleted")


@page(admin=True)
async def channel_probe(ctx: Ctx) -> Response:
    return await _list_page(ctx, await _probe(ctx, ctx.path_int("channel_id"), text(ctx.form, "model") or None))


async def _probe(ctx: Ctx, channel_id: int, model: str | None = None) -> Probe:
    services = ctx.services
    return await channels.test_channel(
        ctx.admin, channel_id, timeouts=services.config.timeouts, session=services.session,
        request_id=ctx.request.scope.get("relaygate.request_id", "console-test"), model=model,
    )  # fmt: skip


@page(admin=True)
async def channel_bulk(ctx: Ctx) -> Response:
    """The checked channels: test them all at once (each with its response time),
    enable or disable them, each change audited as the one-channel buttons do."""
    ids = sorted({int(str(value)) for value in ctx.form.getlist("channel") if str(value).isdigit()})
    action = text(ctx.form, "action")
    if not ids:
        return await _list_page(ctx, status=400, error=_("Check at least one channel first."))
    if action == "test":
        return await _list_page(ctx, probes=list(await asyncio.gather(*(_probe(ctx, channel_id) for channel_id in ids))))
    if action not in ("enable", "disable"):
        return await _list_page(ctx, status=400, error=_("Choose what to do with the checked channels."))
    for channel_id in ids:
        before = await channels.get_channel(ctx.admin, channel_id)
        after = (await channels.enable_channel(ctx.admin, channel_id))[0] if action == "enable" else await channels.disable_channel(ctx.admin, channel_id)
        await ctx.audit(f"channel.{action}", f"channel {channel_id}", before, after)
    return ctx.redirect("/admin/channels", "enabled" if action == "enable" else "disabled")
