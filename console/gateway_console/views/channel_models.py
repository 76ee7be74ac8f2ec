"""The channel form's "Fetch models from the upstream": the models the upstream of
the channel being added or edited offers, asked with what the form holds now (type,
base URL, upstream keys — blank: the stored ones —, headers, settings, timeouts),
through the admin layer's one operation (:mod:`gateway_core.admin.channel_models`),
the one ``relaygate channel models --fetch`` and the API run. Answers JSON for the
form's script (``static/channel_models.js``), which lists the models with checkboxes
that fill the Models field; nothing is saved until the form is."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response

from gateway_core.admin import AdminError, channels
from gateway_core.admin.channel_models import draft_upstream_models
from gateway_core.records import ChannelRecord

from ..channel_form import headers_from_text, settings_from_form
from ..forms import optional_float, text
from ..i18n import _
from ..web import Ctx, page
from .admin_channels import TIMEOUTS


@page(admin=True)
async def models_for_new(ctx: Ctx) -> Response:
    return await _listed(ctx, None)


@page(admin=True)
async def models_for_channel(ctx: Ctx) -> Response:
    return await _listed(ctx, await channels.get_channel(ctx.admin, ctx.path_int("channel_id")))


async def _listed(ctx: Ctx, channel: ChannelRecord | None) -> Response:
    services = ctx.services
    try:
        listed = await draft_upstream_models(
            ctx.admin, _draft(ctx, channel), channel_id=channel.id if channel else None, timeouts=services.config.timeouts,
            session=services.session, request_id=ctx.request.scope.get("relaygate.request_id", "console-models"),
        )  # fmt: skip
    except (ValueError, AdminError) as exc:  # FormError, Invalid: the form's values cannot be used yet
        return JSONResponse({"ok": False, "models": [], "new": [], "message": str(exc)}, status_code=400)
    return JSONResponse({
        "ok": listed.ok, "models": list(listed.models), "new": list(listed.new), "unpriced": list(listed.unpriced),
        "warning": listed.warning, "message": listed.message, "status": listed.status,
    })  # fmt: skip


def _draft(ctx: Ctx, existing: ChannelRecord | None) -> dict[str, Any]:
    """What the form holds of the fields a listing needs (validated by the admin layer)."""
    form = ctx.form
    fields: dict[str, Any] = {"type": text(form, "type"), "base_url": text(form, "base_url", max_length=2000, label=_("The base URL"))}
    keys = [line.strip() for line in str(form.get("api_keys") or "").splitlines() if line.strip()]
    if keys or existing is None:
        fields["api_keys"] = keys
    fields["headers"] = headers_from_text(str(form.get("headers") or ""), existing.headers if existing else {})
    channel_type = ctx.admin.channel_types.get(str(fields["type"]))
    if channel_type is not None:
        fields["settings"] = settings_from_form(form, channel_type)
    for name, what in TIMEOUTS.items():
        fields[name] = optional_float(text(form, name), _(what))
    if existing is not None and fields["type"] == existing.type and not fields["base_url"]:
        del fields["base_url"]  # left empty: the stored one
    return fields
