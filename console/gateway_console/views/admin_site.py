"""Operator pages for groups, model prices and the site-wide usage."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import groups, prices, usage
from gateway_core.admin.rules import parse_rate_limit
from gateway_core.money import format_usd, parse_price_per_mtok
from gateway_core.records import LIMIT_COLUMNS, PriceRecord

from ..chart import spending_chart, window_start
from ..i18n import _
from ..forms import FormError, text
from ..web import Ctx, page


# --- groups ---------------------------------------------------------------------------------


async def _group_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    listed = await groups.list_groups(ctx.admin)
    index = await ctx.services.router.index()
    models = {name: sorted(found) for name, found in getattr(index, "group_models", {}).items()}
    values = dict(ctx.form) if error else {}
    return ctx.render("admin_groups.html", status=status, groups=listed, models=models, error=error, values=values)


@page(admin=True)
async def group_list(ctx: Ctx) -> Response:
    return await _group_page(ctx)


@page(admin=True)
async def group_save(ctx: Ctx) -> Response:
    form = ctx.form
    try:
        name = text(form, "name", required=_("Name the group."), max_length=100)
        ratio = groups.parse_ratio(text(form, "ratio") or "1")
        # the admin layer's rule and message, as the CLI's and the API's
        limits = {column: parse_rate_limit(text(form, column, max_length=20), column) for column in LIMIT_COLUMNS}
        before = next((group for group in await groups.list_groups(ctx.admin) if group.name == name), None)
        after = await groups.set_group(ctx.admin, name, ratio_ppm=ratio, limits=limits)
    except ValueError as exc:  # FormError, Invalid
        return await _group_page(ctx, 400, str(exc))
    await ctx.audit("group.set", f"group {name}", before, after)
    return ctx.redirect("/admin/groups", "saved")


# --- prices ---------------------------------------------------------------------------------


async def _price_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    listed = await prices.list_prices(ctx.admin)
    values = dict(ctx.form) if error else {}
    return ctx.render("admin_prices.html", status=status, prices=listed, error=error, values=values)


@page(admin=True)
async def price_list(ctx: Ctx) -> Response:
    return await _price_page(ctx)


def _per_mtok(value: str, what: str, required: bool = False) -> int | None:
    value = value.strip()
    if not value:
        if required:
            raise FormError(_("Enter the %(what)s price in USD per million tokens (0 for none).", what=what))
        return None
    try:
        return parse_price_per_mtok(value)
    except ValueError as exc:
        raise FormError(f"{what}: {exc}") from None  # the reason is the admin layer's (English)


@page(admin=True)
async def price_save(ctx: Ctx) -> Response:
    form = ctx.form
    try:
        free = form.get("free") == "on"
        price = PriceRecord(
            text(form, "model", required=_("Name the model."), max_length=200),
            _per_mtok(text(form, "input"), _("input"), not free) or 0,
            _per_mtok(text(form, "output"), _("output"), not free) or 0,
            cached_input_micros_per_mtok=_per_mtok(text(form, "cached_input"), _("cached input")),
            cache_write_micros_per_mtok=_per_mtok(text(form, "cache_write"), _("cache write")),
            free=free,
        )
        before = next((item for item in await prices.list_prices(ctx.admin) if item.model == price.model), None)
        after = await prices.set_price(ctx.admin, price)
    except ValueError as exc:
        return await _price_page(ctx, 400, str(exc))
    await ctx.audit("price.set", f"price {price.model}", before, after)
    return ctx.redirect("/admin/prices", "saved")


@page(admin=True)
async def price_delete(ctx: Ctx) -> Response:
    model = text(ctx.form, "model", max_length=200)
    before = next((item for item in await prices.list_prices(ctx.admin) if item.model == model), None)
    await prices.delete_price(ctx.admin, model)
    await ctx.audit("price.delete", f"price {model}", before, None)
    return ctx.redirect("/admin/prices", "deleted")


# --- site-wide usage ------------------------------------------------------------------------


@page(admin=True)
async def usage_report(ctx: Ctx) -> Response:
    first, since = window_start()
    spending = await usage.daily_spending(ctx.admin, since)
    totals = {by: await usage.usage_totals(ctx.admin, by, since) for by in usage.TOTALS_BY}
    summary = {
        "requests": sum(row.requests for row in spending),
        "cost": format_usd(sum(row.cost_micros for row in spending)),
        "errors": sum(row.errors for row in spending),
    }
    return ctx.render(
        "admin_usage.html", chart=spending_chart(spending, first), totals=summary, since=since, spending=spending,
        by_model=totals["model"], by_user=totals["user"], by_channel=totals["channel"],
    )  # fmt: skip
