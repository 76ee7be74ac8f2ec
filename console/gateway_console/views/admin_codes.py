"""Operator page for redemption codes: create a batch (its plain codes shown in the
answer to that POST, with a CSV of them: the store keeps only their hashes, so this
is the one time they exist), list them (all, or one batch), disable one, and export a
batch's listing as CSV (prefixes and states, never the codes)."""

from __future__ import annotations

import csv
import io
import time
from urllib.parse import quote

from starlette.responses import Response

from gateway_core.admin import codes, groups
from gateway_core.money import format_usd

from ..i18n import _
from ..forms import FormError, future_time, optional_int, optional_usd, text
from ..web import Ctx, page

CSV_COLUMNS = ("id", "batch", "prefix", "value_usd", "group", "expires_at", "note", "state", "created_at", "redeemed_by", "redeemed_at")


def _batch(ctx: Ctx) -> str | None:
    return ctx.request.query_params.get("batch", "").strip()[:40] or None


async def _page(ctx: Ctx, status: int = 200, error: str | None = None, created: list[tuple[int, str]] | None = None, batch: str | None = None) -> Response:
    batch = batch or _batch(ctx)
    listed = await codes.list_codes(ctx.admin, batch=batch)
    values = {name: str(value) for name, value in ctx.form.items()} if error else {}
    plain = "".join(f"{code}\r\n" for _id, code in created or ())
    return ctx.render(
        "admin_codes.html", status=status, error=error, codes=listed, batch=batch, values=values, created=created,
        groups=[group.name for group in await groups.list_groups(ctx.admin)],
        created_csv="data:text/csv;charset=utf-8," + quote("code\r\n" + plain) if created else None,
    )  # fmt: skip


@page(admin=True)
async def code_list(ctx: Ctx) -> Response:
    return await _page(ctx)


@page(admin=True)
async def code_create(ctx: Ctx) -> Response:
    form = ctx.form
    try:
        count = optional_int(text(form, "count"), _("The number of codes"))
        value = optional_usd(text(form, "value"), _("The value"))
        if not count or not value:
            raise FormError(_("Give the number of codes and the value of each, in USD."))
        batch = codes.new_batch()
        created = await codes.create_codes(
            ctx.admin, batch=batch, count=count, value_micros=value, expires_at=future_time(text(form, "expires"), _("The expiry")),
            group=text(form, "group") or None, note=text(form, "note", max_length=500, label=_("The note")) or None,
        )  # fmt: skip
    except ValueError as exc:  # FormError, Invalid
        return await _page(ctx, 400, str(exc))
    await ctx.audit("code.create", f"batch {batch}", None, {"count": count, "value_micros": value, "ids": [i for i, _code in created]})
    return await _page(ctx, created=created, batch=batch)


@page(admin=True)
async def code_disable(ctx: Ctx) -> Response:
    code_id = ctx.path_int("code_id")
    await codes.disable_code(ctx.admin, code_id)
    await ctx.audit("code.disable", f"code {code_id}", None, {"enabled": False})
    return ctx.redirect("/admin/codes" + (f"?batch={quote(b)}" if (b := text(ctx.form, "batch")) else ""), "disabled")


@page(admin=True)
async def code_export(ctx: Ctx) -> Response:
    """The listing (of one batch with ``?batch=``) as CSV: what the store keeps, not the codes."""
    now, out = time.time(), io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for code in await codes.list_codes(ctx.admin, batch=_batch(ctx), limit=codes.MAX_BATCH):
        writer.writerow([
            code.id, code.batch, code.prefix, format_usd(code.value_micros), code.group or "", _iso(code.expires_at), code.note or "",
            code.state(now), _iso(code.created_at), code.redeemed_by or "", _iso(code.redeemed_at),
        ])  # fmt: skip
    name = f"codes-{_batch(ctx) or 'all'}.csv"
    return Response(out.getvalue(), media_type="text/csv", headers={"Content-Disposition": f'attachment; filename="{name}"'})


def _iso(moment: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment)) if moment else ""
