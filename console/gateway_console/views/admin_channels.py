"""Operator pages for channels: list with health (traffic, circuit breakers, disabled
keys), add, edit, test, enable/disable, delete. Upstream keys are shown masked only,
and kept when an edit leaves them blank."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from starlette.responses import Response

from gateway_core.health_report import read_channel_health
from gateway_core.records import ChannelRecord
from gateway_core.store.channels import add_channel, list_channels

from .. import queries
from ..forms import FormError, model_map, optional_int, split_list, text
from ..probe import probe_channel
from ..web import Ctx, page

HEALTH_WINDOW = 24 * 3600


def _channel(conn: sqlite3.Connection, channel_id: int) -> ChannelRecord | None:
    return next((c for c in list_channels(conn) if c.id == channel_id), None)


def _overview(conn: sqlite3.Connection, in_flight: dict[int, int]) -> tuple[list[ChannelRecord], dict, dict]:
    """Channels, their traffic over 24 h, and their breakers and keys (the core's view)."""
    traffic = queries.channel_health(conn, time.time() - HEALTH_WINDOW)
    return list_channels(conn), traffic, read_channel_health(conn, in_flight=in_flight)


@page(admin=True)
async def channel_list(ctx: Ctx) -> Response:
    channels, health, breakers = await ctx.read(_overview, ctx.services.health.in_flight())
    return ctx.render("admin_channels.html", channels=channels, health=health, breakers=breakers, probe=None)


def _fields(ctx: Ctx, existing: ChannelRecord | None) -> dict[str, Any]:
    form = ctx.form
    kind = text(form, "type", required="Choose a channel type.")
    channel_type = ctx.services.registry.channel_types.get(kind)
    if channel_type is None:
        raise FormError(f"No loaded plugin provides the channel type {kind!r}.")
    keys = [line.strip() for line in str(form.get("api_keys") or "").splitlines() if line.strip()]
    fields = {
        "name": text(form, "name", required="Give the channel a name.", max_length=100),
        "type": kind,
        "base_url": channel_type.normalize_base_url(text(form, "base_url", max_length=2000)),
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
    types = sorted(ctx.services.registry.channel_types)
    values = dict(ctx.form) if error else {}
    return ctx.render("admin_channel_form.html", status=status, channel=channel, types=types, values=values, error=error)


@page(admin=True)
async def channel_new(ctx: Ctx) -> Response:
    if ctx.request.method == "GET":
        return _form(ctx, None)
    try:
        fields = _fields(ctx, None)
        await ctx.write(lambda conn: add_channel(conn, **fields))
    except sqlite3.IntegrityError:
        return _form(ctx, None, 400, "A channel with that name exists already.")
    except ValueError as exc:
        return _form(ctx, None, 400, str(exc))
    ctx.services.router.invalidate()
    return ctx.redirect("/admin/channels", "created")


@page(admin=True)
async def channel_edit(ctx: Ctx) -> Response:
    channel = await ctx.read(_channel, ctx.path_int("channel_id"))
    if channel is None:
        return ctx.not_found("channel")
    if ctx.request.method == "GET":
        return _form(ctx, channel)
    try:
        fields = _fields(ctx, channel)
        await ctx.write(queries.update_channel, channel.id, fields)
    except sqlite3.IntegrityError:
        return _form(ctx, channel, 400, "A channel with that name exists already.")
    except ValueError as exc:
        return _form(ctx, channel, 400, str(exc))
    ctx.services.router.invalidate()
    return ctx.redirect("/admin/channels", "saved")


def _switch(action: str):
    @page(admin=True)
    async def switch(ctx: Ctx) -> Response:
        channel_id = ctx.path_int("channel_id")
        if action == "delete":
            found = await ctx.write(queries.delete_channel, channel_id)
        else:
            found = await ctx.write(queries.update_channel, channel_id, {"enabled": action == "enable"})
        if not found:
            return ctx.not_found("channel")
        ctx.services.router.invalidate()
        return ctx.redirect("/admin/channels", {"enable": "enabled", "disable": "disabled"}.get(action, "deleted"))

    switch.__name__ = f"channel_{action}"
    return switch


channel_enable = _switch("enable")
channel_disable = _switch("disable")
channel_delete = _switch("delete")


@page(admin=True)
async def channel_probe(ctx: Ctx) -> Response:
    channel = await ctx.read(_channel, ctx.path_int("channel_id"))
    if channel is None:
        return ctx.not_found("channel")
    request_id = ctx.request.scope.get("relaygate.request_id", "console-test")
    result = await probe_channel(ctx.services, channel, request_id, text(ctx.form, "model") or None)
    channels, health, breakers = await ctx.read(_overview, ctx.services.health.in_flight())
    return ctx.render("admin_channels.html", channels=channels, health=health, breakers=breakers, probe=(channel, result))
