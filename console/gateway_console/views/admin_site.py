"""Operator pages for groups, model prices and the site-wide usage."""

from __future__ import annotations

import sqlite3
from typing import Any

from starlette.responses import Response

from gateway_core.money import format_usd, parse_price_per_mtok
from gateway_core.store.prices import delete_price, list_prices, set_price

from .. import queries
from ..chart import spending_chart, window_start
from ..forms import FormError, optional_int, ratio_ppm, text
from ..web import Ctx, page

# --- groups ---------------------------------------------------------------------------------


def _groups(conn: sqlite3.Connection) -> tuple[list[dict], bool]:
    rows = queries.list_groups(conn)
    has_limits = set(queries.LIMIT_COLUMNS) <= queries.group_columns(conn)
    return rows, has_limits


async def _group_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    groups, has_limits = await ctx.read(_groups)
    index = await ctx.services.router.index()
    models = {name: sorted(found) for name, found in getattr(index, "group_models", {}).items()}
    values = dict(ctx.form) if error else {}
    return ctx.render(
        "admin_groups.html", status=status, groups=groups, has_limits=has_limits, models=models, error=error, values=values
    )


@page(admin=True)
async def group_list(ctx: Ctx) -> Response:
    return await _group_page(ctx)


@page(admin=True)
async def group_save(ctx: Ctx) -> Response:
    form = ctx.form
    try:
        name = text(form, "name", required="Name the group.", max_length=100)
        ratio = ratio_ppm(text(form, "ratio"))
        limits = {column: optional_int(text(form, column), column) for column in queries.LIMIT_COLUMNS}
        await ctx.write(queries.save_group, name, ratio, limits)
    except ValueError as exc:
        return await _group_page(ctx, 400, str(exc))
    ctx.services.keys.invalidate()  # cached keys carry their group's limits
    return ctx.redirect("/admin/groups", "saved")


# --- prices ---------------------------------------------------------------------------------


async def _price_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    prices = await ctx.read(list_prices)
    values = dict(ctx.form) if error else {}
    return ctx.render("admin_prices.html", status=status, prices=prices, error=error, values=values)


@page(admin=True)
async def price_list(ctx: Ctx) -> Response:
    return await _price_page(ctx)


def _per_mtok(value: str, what: str, required: bool = False) -> int | None:
    value = value.strip()
    if not value:
        if required:
            raise FormError(f"Enter the {what} price in USD per million tokens (0 for none).")
        return None
    try:
        return parse_price_per_mtok(value)
    except ValueError as exc:
        raise FormError(f"{what}: {exc}") from None


@page(admin=True)
async def price_save(ctx: Ctx) -> Response:
    form = ctx.form
    try:
        model = text(form, "model", required="Name the model.", max_length=200)
        free = form.get("free") == "on"
        fields: dict[str, Any] = {
            "cached_input_micros_per_mtok": _per_mtok(text(form, "cached_input"), "cached input"),
            "cache_write_micros_per_mtok": _per_mtok(text(form, "cache_write"), "cache write"),
            "free": free,
        }
        prices = (_per_mtok(text(form, "input"), "input", not free) or 0, _per_mtok(text(form, "output"), "output", not free) or 0)
        await ctx.write(lambda conn: set_price(conn, model, *prices, **fields))
    except ValueError as exc:
        return await _price_page(ctx, 400, str(exc))
    return ctx.redirect("/admin/prices", "saved")


@page(admin=True)
async def price_delete(ctx: Ctx) -> Response:
    model = text(ctx.form, "model", max_length=200)
    if not await ctx.write(delete_price, model):
        return ctx.not_found("price")
    return ctx.redirect("/admin/prices", "deleted")


# --- site-wide usage ------------------------------------------------------------------------


def _usage(conn: sqlite3.Connection, since: float) -> dict[str, Any]:
    return {
        "spending": queries.daily_spending(conn, since),
        "by_model": queries.usage_by(conn, "model", since),
        "by_user": queries.usage_by(conn, "user", since),
        "by_channel": queries.usage_by(conn, "channel", since),
    }


@page(admin=True)
async def usage(ctx: Ctx) -> Response:
    first, since = window_start()
    data = await ctx.read(_usage, since)
    totals = {
        "requests": sum(r["requests"] for r in data["spending"]),
        "cost": format_usd(sum(r["cost"] or 0 for r in data["spending"])),
        "errors": sum(r["errors"] or 0 for r in data["spending"]),
    }
    chart = spending_chart(data["spending"], first)
    return ctx.render("admin_usage.html", chart=chart, totals=totals, since=since, **data)
