"""``/api/v1/usage``: the caller's usage log (filters, cursor pages, CSV) and
its summary per day and model; ``/api/v1/logs`` and ``/api/v1/site/usage``:
everyone's, for admins."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import attrs
from starlette.responses import Response, StreamingResponse

from gateway_core.admin import usage, usage_export
from gateway_core.money import format_usd
from gateway_core.records import Cursor, UsageFilter
from .errors import ApiError
from .operation import ApiCall, Operation, Param
from .schema import ID, TIME, array, micros, obj, page, usd

DAY = 86_400.0
ROW = obj(
    {
        "id": ID, "request_id": {"type": "string"}, "created_at": TIME, "user_id": {"type": ["integer", "null"]},
        "key_id": {"type": ["integer", "null"]}, "model": {"type": ["string", "null"]}, "status": {"type": ["integer", "null"]},
        "input_tokens": {"type": ["integer", "null"]}, "output_tokens": {"type": ["integer", "null"]},
        "cost": usd("cost"), "cost_micros": micros("cost"),
        "error_summary": {"type": ["string", "null"], "description": "a failure in the gateway's words (the caller's own rows)"},
    },
    ("id", "request_id", "created_at", "cost", "cost_micros"),
    closed=False,
)  # fmt: skip
FILTERS = (
    Param("key_id", ID, "only this key's requests"),
    Param("model", {"type": "string", "minLength": 1, "maxLength": 200}, "only this model"),
    Param("status", {"type": "integer", "minimum": 100, "maximum": 599}, "only this HTTP status"),
    Param("errors", {"type": "boolean"}, "only failed requests (status 400 and above)"),
    Param("since", {"type": "number", "minimum": 0, "maximum": 1e11}, "from this Unix time"),
    Param("until", {"type": "number", "minimum": 0, "maximum": 1e11}, "before this Unix time"),
    Param("request_id", {"type": "string", "minLength": 1, "maxLength": 200}, "only the request with this id (X-Request-Id)"),
)
PAGING = (
    Param("cursor", {"type": "string", "maxLength": 100}, "next_cursor of the previous page"),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": usage.MAX_PAGE}, "rows per page (default 50)"),
)
EXPORT = FILTERS + (
    Param("cursor", {"type": "string", "maxLength": 100}, "start after this row (a next_cursor of GET /usage)"),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 10_000_000}, "at most this many rows (default: all)"),
)
USER_FILTER = Param("user_id", ID, "only this user's requests")
TEAM_FILTER = Param("team_id", ID, "only the requests charged to this team (docs/teams.md)")
SPAN = (
    Param("since", {"type": "number", "minimum": 0, "maximum": 1e11}, "from this Unix time (default: 30 days ago)"),
)
SUMMARY_SPAN = SPAN + (
    Param("until", {"type": "number", "minimum": 0, "maximum": 1e11}, "to the UTC day of this Unix time, included (default: today)"),
)
DAILY = obj(
    {"day": {"type": "string"}, "model": {"type": "string"}, "cost": usd("cost"), "cost_micros": micros("cost"),
     "requests": {"type": "integer"}, "errors": {"type": "integer"}},
    ("day", "model", "cost", "cost_micros", "requests", "errors"),
)  # fmt: skip
MODEL_TOTAL = obj(
    {"model": {"type": "string"}, "cost": usd("cost"), "cost_micros": micros("cost"), "requests": {"type": "integer"}, "errors": {"type": "integer"}},
    ("model", "cost", "cost_micros", "requests", "errors"),
)
SUMMARY = obj({"since": TIME, "days": array(DAILY), "models": array(MODEL_TOTAL)}, ("since", "days", "models"))
TOTAL = obj(
    {"label": {"type": ["string", "null"]}, "requests": {"type": "integer"}, "input_tokens": {"type": "integer"},
     "output_tokens": {"type": "integer"}, "cost": usd("cost"), "cost_micros": micros("cost"), "errors": {"type": "integer"}},
    ("label", "requests", "cost", "cost_micros"),
)  # fmt: skip
SITE = obj({"since": TIME, "by_model": array(TOTAL), "by_user": array(TOTAL), "by_channel": array(TOTAL), "days": array(DAILY)},
           ("since", "by_model", "by_user", "by_channel", "days"))  # fmt: skip


def row_json(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "cost": format_usd(row.get("cost_micros") or 0), "cost_micros": row.get("cost_micros") or 0}


def _filters(call: ApiCall, user_id: int | None) -> tuple[UsageFilter, Cursor | None]:
    query = call.query
    filters = UsageFilter(
        key_id=query.get("key_id"), user_id=user_id if user_id is not None else query.get("user_id"), model=query.get("model"),
        status=query.get("status"), errors=bool(query.get("errors", False)), since=query.get("since"), until=query.get("until"),
        team_id=query.get("team_id"),
    )  # fmt: skip
    if "cursor" not in query:
        return filters, None
    try:
        return filters, usage.parse_cursor(query["cursor"])
    except ValueError as exc:
        raise ApiError(400, str(exc), field="cursor") from None


async def _page(call: ApiCall, user_id: int | None) -> dict[str, Any]:
    """A page of rows; ``user_id``: that user's own, shown as their owner sees them
    (no channel, no upstream error text: :func:`usage.for_owner`)."""
    shown = row_json if user_id is None else lambda row: row_json(usage.for_owner(row))
    if "request_id" in call.query:
        row = await usage.find_request(call.admin, call.query["request_id"], owner=user_id)
        return {"items": [shown(row)] if row is not None else [], "next_cursor": None}
    filters, before = _filters(call, user_id)
    found = await usage.page_usage(call.admin, filters, before=before, limit=call.query.get("limit", 50))
    cursor = usage.page_cursor(found.rows[-1]) if found.more and found.rows else None
    return {"items": [shown(row) for row in found.rows], "next_cursor": cursor}


async def list_usage(call: ApiCall) -> dict[str, Any]:
    return await _page(call, call.user_id)


async def _export(call: ApiCall, user_id: int | None, fmt: str) -> Response:
    """Every matching row (``limit``: at most that many) in ``fmt``, streamed page by
    page: memory stays bounded whatever the range. ``user_id``: that user's own
    rows, with the columns an owner is shown."""
    owner = user_id is not None
    media_type = usage_export.media_type(fmt)
    headers = {"content-disposition": f'attachment; filename="usage.{fmt}"'}
    filters, before = _filters(call, user_id)
    if "request_id" in call.query:
        row = await usage.find_request(call.admin, call.query["request_id"], owner=user_id)
        text = await usage_export.export_found(call.admin, [row] if row is not None else [], fmt, owner=owner)
        return Response(text, media_type=media_type, headers=headers)
    lines = usage_export.export_usage(call.admin, filters, fmt, owner=owner, before=before, most=call.query.get("limit"))
    return StreamingResponse(lines, media_type=media_type, headers=headers)


async def export_usage_csv(call: ApiCall) -> Response:
    return await _export(call, call.user_id, "csv")


async def export_usage_jsonl(call: ApiCall) -> Response:
    return await _export(call, call.user_id, "jsonl")


async def export_logs_csv(call: ApiCall) -> Response:
    return await _export(call, None, "csv")


async def export_logs_jsonl(call: ApiCall) -> Response:
    return await _export(call, None, "jsonl")


async def usage_summary(call: ApiCall) -> dict[str, Any]:
    since = call.query.get("since", time.time() - 30 * DAY)
    days = await usage.daily_spending(call.admin, since, call.user_id)
    if "until" in call.query:
        last_day = dt.datetime.fromtimestamp(call.query["until"], dt.timezone.utc).strftime("%Y-%m-%d")
        days = [day for day in days if day.day <= last_day]
    models: dict[str, dict[str, int]] = {}
    for day in days:
        total = models.setdefault(day.model, {"cost_micros": 0, "requests": 0, "errors": 0})
        for name in total:
            total[name] += getattr(day, name)
    return {
        "since": since,
        "days": [_money(attrs.asdict(day)) for day in days],
        "models": [_money({"model": model, **total}) for model, total in sorted(models.items())],
    }


async def list_logs(call: ApiCall) -> dict[str, Any]:
    return await _page(call, None)


async def site_usage(call: ApiCall) -> dict[str, Any]:
    since = call.query.get("since", time.time() - 30 * DAY)
    result: dict[str, Any] = {"since": since}
    for by in usage.TOTALS_BY:
        result[f"by_{by}"] = [_money(attrs.asdict(total)) for total in await usage.usage_totals(call.admin, by, since)]
    result["days"] = [_money(attrs.asdict(day)) for day in await usage.daily_spending(call.admin, since)]
    return result


def _money(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "cost": format_usd(item["cost_micros"])}


OPERATIONS = (
    Operation("GET", "/usage", "Your usage log, newest first (filters; cursor pages)", "usage", "read", list_usage, page(ROW), query=FILTERS + PAGING),
    Operation("GET", "/usage.csv", "Your usage log as CSV: every matching row (at most limit), streamed", "usage", "read", export_usage_csv, {"type": "string"}, query=EXPORT, media_type="text/csv"),
    Operation("GET", "/usage.jsonl", "Your usage log as JSON lines: every matching row (at most limit), streamed", "usage", "read", export_usage_jsonl, {"type": "string"}, query=EXPORT, media_type="application/x-ndjson"),
    Operation("GET", "/usage/summary", "Your cost and requests per UTC day and per model", "usage", "read", usage_summary, SUMMARY, query=SUMMARY_SPAN),
    Operation("GET", "/logs", "Everyone's usage log (admin)", "site", "admin", list_logs, page(ROW), query=(USER_FILTER, TEAM_FILTER, *FILTERS, *PAGING)),
    Operation("GET", "/logs.csv", "Everyone's usage log as CSV, with each row's user: every matching row (at most limit), streamed (admin)", "site", "admin", export_logs_csv, {"type": "string"}, query=(USER_FILTER, TEAM_FILTER, *EXPORT), media_type="text/csv"),
    Operation("GET", "/logs.jsonl", "Everyone's usage log as JSON lines, with each row's user: every matching row (at most limit), streamed (admin)", "site", "admin", export_logs_jsonl, {"type": "string"}, query=(USER_FILTER, TEAM_FILTER, *EXPORT), media_type="application/x-ndjson"),
    Operation("GET", "/site/usage", "Totals by model, user and channel, and per day (admin)", "site", "admin", site_usage, SITE, query=SPAN),
)
