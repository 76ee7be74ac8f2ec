"""Request logs: filtered, newest first, keyset-paginated; a request's detail.

A user sees only their own rows (the user id is part of every query); an
operator sees every user's under ``/admin/logs``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.responses import Response

from .. import queries
from ..forms import FormError, when
from ..web import Ctx, page

PAGE_SIZE = 50
FILTER_NAMES = ("key", "model", "status", "since", "until", "user")


def _filters(ctx: Ctx, user_id: int | None) -> tuple[dict[str, Any], dict[str, str]]:
    """Query filters from the URL, and the raw values to echo in the form."""
    query = ctx.request.query_params
    raw = {name: query.get(name, "").strip() for name in FILTER_NAMES}
    raw["key"] = raw["key"] or query.get("token", "").strip()  # "token": the name other gateways use
    filters: dict[str, Any] = {"user_id": user_id}
    for name, column in (("key", "key_id"), ("before", "before"), ("after", "after")):
        value = raw.get(name, query.get(name, "")).strip()
        if value:
            if not value.isdigit():
                raise FormError(f"{name} must be a number")
            filters[column] = int(value)
    if user_id is None and raw["user"]:
        if not raw["user"].isdigit():
            raise FormError("user must be a user id")
        filters["user_id"] = int(raw["user"])
    filters["model"] = raw["model"] or None
    status = raw["status"]
    if status and status != "errors" and not (status.isdigit() and len(status) == 3):
        raise FormError("status must be a 3-digit code or 'errors'")
    filters["status"] = status or None
    filters["since"] = when(raw["since"], "From")
    filters["until"] = when(raw["until"], "Until")
    return filters, raw


def _link(ctx: Ctx, path: str, raw: dict[str, str], **paging: int) -> str:
    params = {name: value for name, value in raw.items() if value}
    params.update({name: str(value) for name, value in paging.items()})
    return ctx.url(path) + ("?" + urlencode(params) if params else "")


async def _logs(ctx: Ctx, user_id: int | None, path: str) -> Response:
    try:
        filters, raw = _filters(ctx, user_id)
    except FormError as exc:
        filters, raw, error = {"user_id": user_id, "key_id": -1}, {}, str(exc)
    else:
        error = None
    rows, more = await ctx.read(lambda conn: queries.query_logs(conn, filters, limit=PAGE_SIZE))
    paging_after = filters.get("after") is not None
    newer = older = None
    if rows:
        if more or paging_after:
            older = _link(ctx, path, raw, before=rows[-1]["id"])
        if filters.get("before") is not None or (paging_after and more):
            newer = _link(ctx, path, raw, after=rows[0]["id"])
    detail = path + "/"
    if ctx.request.query_params.get("fragment") == "rows":
        return ctx.render("log_rows.html", rows=rows, detail=detail, admin=user_id is None)
    keys = await ctx.read(queries.key_choices, user_id) if user_id is not None else []
    first_page = filters.get("before") is None and filters.get("after") is None
    return ctx.render(
        "logs.html", status=400 if error else 200, rows=rows, keys=keys, raw=raw, error=error, older=older,
        newer=newer, first=_link(ctx, path, raw), live=first_page, detail=detail, admin=user_id is None,
    )  # fmt: skip


@page()
async def log_list(ctx: Ctx) -> Response:
    return await _logs(ctx, ctx.user.id, "/logs")


@page(admin=True)
async def admin_log_list(ctx: Ctx) -> Response:
    return await _logs(ctx, None, "/admin/logs")


async def _detail(ctx: Ctx, user_id: int | None) -> Response:
    row = await ctx.read(queries.log_detail, ctx.path_int("log_id"), user_id)
    if row is None:
        return ctx.not_found("request")
    return ctx.render("log_detail.html", row=row, admin=user_id is None)


@page()
async def log_detail(ctx: Ctx) -> Response:
    return await _detail(ctx, ctx.user.id)


@page(admin=True)
async def admin_log_detail(ctx: Ctx) -> Response:
    return await _detail(ctx, None)
