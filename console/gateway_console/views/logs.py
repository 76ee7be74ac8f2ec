"""Request logs: filtered, newest first, keyset-paginated, with the totals of
the filter, a search by request id and an export (CSV or JSON lines); a request's detail.

A user sees only their own rows (their id is part of every page's filter), or with
``?team=`` a team's they have a role in (the team's account is the owner then); an
operator sees every user's under ``/admin/logs``, filtered by user or team. Pages come from the admin
layer's usage-log pager, the one ``relaygate logs`` uses; the export is the
management API's writer (:func:`gateway_core.admin.usage_export.export_usage`).

A user's detail page says what failed in safe words (the status, the error's
kind and the request id to quote); the channel, the upstream's own error text
and the routing attempts' errors are for operators only: they can name the
operator's providers and accounts.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.responses import Response, StreamingResponse

from gateway_core.admin import keys, prices, teams, usage, usage_export, wallet
from gateway_core.records import Cursor, UsageFilter

from ..i18n import _
from ..forms import FormError, optional_int, when
from ..web import Ctx, page
from .teams import chosen_team

PAGE_SIZE = 50
FILTER_NAMES = ("key", "model", "status", "since", "until", "user", "team", "request")


def _cursor(value: str, what: str) -> Cursor | None:
    try:
        return usage.parse_cursor(value) if value else None
    except ValueError:
        raise FormError(_("%(what)s is not a page of this log", what=what)) from None


def _filters(ctx: Ctx, owner: int | None) -> tuple[UsageFilter, dict[str, str]]:
    """The page's filter from the URL (only ``owner``'s rows when given), and the
    raw values to echo in the form."""
    query = ctx.request.query_params
    raw = {name: query.get(name, "").strip() for name in FILTER_NAMES}
    raw["key"] = raw["key"] or query.get("token", "").strip()  # "token": the name other gateways use
    user_id = owner if owner is not None else optional_int(raw["user"], _("user"))
    status = raw["status"]
    if status and status != "errors" and not (status.isdigit() and len(status) == 3):
        raise FormError(_("status must be a 3-digit code or 'errors'"))
    team_id = optional_int(raw["team"], _("team")) if owner is None else None  # a user's team: its account is the owner
    filters = UsageFilter(
        key_id=optional_int(raw["key"], _("key")), user_id=user_id, team_id=team_id, model=raw["model"] or None,
        status=int(status) if status.isdigit() else None, errors=status == "errors",
        since=when(raw["since"], _("From")), until=when(raw["until"], _("Until")),
    )  # fmt: skip
    return filters, raw


def _link(ctx: Ctx, path: str, raw: dict[str, str], **paging: str) -> str:
    params = {name: value for name, value in raw.items() if value}
    params.update(paging)
    return ctx.url(path) + ("?" + urlencode(params) if params else "")


async def _logs(ctx: Ctx, owner: int | None, path: str) -> Response:
    query = ctx.request.query_params
    error = None
    try:
        filters, raw = _filters(ctx, owner)
        before = _cursor(query.get("before", "").strip(), "before")
        after = _cursor(query.get("after", "").strip(), "after")
    except FormError as exc:
        filters, raw, before, after, error = UsageFilter(key_id=-1, user_id=owner), {}, None, None, str(exc)
    request_id = raw.get("request", "")[:200]
    if request_id:  # one request, by the id its answer carried (X-Request-Id)
        row = await usage.find_request(ctx.admin, request_id, owner=owner)
        found = usage.UsagePage([row] if row else [], False)
    else:
        found = await usage.page_usage(ctx.admin, filters, before=before, after=after, limit=PAGE_SIZE)
    rows = found.rows
    newer = older = None
    if rows and not request_id:
        if found.more or after is not None:
            older = _link(ctx, path, raw, before=usage.page_cursor(rows[-1]))
        if before is not None or (after is not None and found.more):
            newer = _link(ctx, path, raw, after=usage.format_cursor(usage.cursor_of(rows[0])))
    detail = path + "/"
    team_query = "?" + urlencode({"team": raw["team"]}) if owner is not None and raw.get("team") else ""
    if query.get("fragment") == "rows":
        return ctx.render("log_rows.html", rows=rows, detail=detail, team_query=team_query, admin=owner is None)
    # the filter's totals: for the whole page only, not each live refresh
    totals = await usage.filter_totals(ctx.admin, filters) if not request_id and not error else None
    choices = []
    if owner is not None:  # deleted keys too: their rows remain
        choices = sorted(await keys.list_keys(ctx.admin, owner, include_deleted=True), key=lambda key: key.deleted)
    params = {name: value for name, value in raw.items() if value}
    query_text = "?" + urlencode(params) if params else ""
    export = {fmt: ctx.url(f"{path}/export.{fmt}") + query_text for fmt in usage_export.FORMATS}
    return ctx.render(
        "logs.html", status=400 if error else 200, rows=rows, keys=choices, raw=raw, error=error, older=older,
        newer=newer, first=_link(ctx, path, raw), live=before is None and after is None and not request_id,
        detail=detail, team_query=team_query, admin=owner is None, totals=totals, teams=await teams.list_teams(ctx.admin, caller=ctx.user), models=await _model_choices(ctx, owner, raw["model"] if raw else ""),
        export=export,
    )  # fmt: skip


async def _model_choices(ctx: Ctx, owner: int | None, current: str) -> list[str]:
    """The models to filter by: those the user may call (every served model for an
    operator), and the one filtered by now."""
    if owner is None:
        index = await ctx.services.router.index()
        names = set(getattr(index, "models", {}))
    else:
        names = {item.model for item in await prices.models_for_user(ctx.admin, owner)}
    return sorted(names | ({current} if current else set()))


async def _export(ctx: Ctx, owner: int | None, fmt: str) -> Response:
    """Every row of the filter (or the one request searched for) in ``fmt``, streamed."""
    try:
        filters, raw = _filters(ctx, owner)
    except FormError as exc:
        return ctx.error(400, str(exc))
    media_type = usage_export.media_type(fmt)
    headers = {"content-disposition": f'attachment; filename="logs.{fmt}"'}
    request_id = raw["request"][:200]
    if request_id:
        row = await usage.find_request(ctx.admin, request_id, owner=owner)
        text = await usage_export.export_found(ctx.admin, [row] if row else [], fmt, owner=owner is not None)
        return Response(text, media_type=media_type, headers=headers)
    lines = usage_export.export_usage(ctx.admin, filters, fmt, owner=owner is not None)
    return StreamingResponse(lines, media_type=media_type, headers=headers)


async def _owner(ctx: Ctx) -> int:
    """Whose rows a user's page shows: a team's (``?team=``, any of its roles: its
    account pays for them) or the viewer's own."""
    team = await chosen_team(ctx, ctx.request.query_params.get("team", ""))
    return team.account_id if team else ctx.user.id


@page()
async def log_export(ctx: Ctx) -> Response:
    return await _export(ctx, await _owner(ctx), "csv")


@page()
async def log_export_jsonl(ctx: Ctx) -> Response:
    return await _export(ctx, await _owner(ctx), "jsonl")


@page(admin=True)
async def admin_log_export(ctx: Ctx) -> Response:
    return await _export(ctx, None, "csv")


@page(admin=True)
async def admin_log_export_jsonl(ctx: Ctx) -> Response:
    return await _export(ctx, None, "jsonl")


@page()
async def log_list(ctx: Ctx) -> Response:
    return await _logs(ctx, await _owner(ctx), "/logs")


@page(admin=True)
async def admin_log_list(ctx: Ctx) -> Response:
    return await _logs(ctx, None, "/admin/logs")


async def _detail(ctx: Ctx, user_id: int | None) -> Response:
    row = await usage.get_usage(ctx.admin, ctx.path_int("log_id"), owner=user_id)
    ledger = await wallet.request_ledger(ctx.admin, row["request_id"], owner=user_id)
    return ctx.render("log_detail.html", row=row, admin=user_id is None, ledger=ledger, summary=usage.safe_summary(row))


@page()
async def log_detail(ctx: Ctx) -> Response:
    return await _detail(ctx, await _owner(ctx))


@page(admin=True)
async def admin_log_detail(ctx: Ctx) -> Response:
    return await _detail(ctx, None)
