"""The home page after sign-in: spend, requests, tokens and errors over a chosen
span, over time and by model and key — a user's own, a team's (by member too, for
any of its roles), or (admins) the whole site's by user and channel with the
channels' health.

Every figure comes from one aggregation of the usage log,
:func:`gateway_core.admin.usage.usage_totals` (and its buckets over time,
:func:`~gateway_core.admin.usage.usage_series`), the one behind the management
API's site usage: whole hours (and the site's whole UTC days) from the log's hourly
totals, which survive its pruning, the rest from its rows (docs/billing.md).
"""

from __future__ import annotations

import asyncio
import math
import time
from datetime import UTC, date, datetime

import attrs
from starlette.responses import Response

from gateway_core.admin import channels, teams, usage
from gateway_core.records import UsageTotal

from ..chart import usage_charts
from ..i18n import N_, _
from ..web import Ctx, page
from .teams import chosen_team

HOUR, DAY = 3600, 86_400
RANGES = {"24h": (N_("Last 24 hours"), HOUR, 24), "7d": (N_("Last 7 days"), DAY, 7), "30d": (N_("Last 30 days"), DAY, 30)}  # labels translated when shown
MAX_CUSTOM_DAYS = 366
MAX_OFFSET = 14 * 60  # the farthest zone from UTC, in minutes


@attrs.frozen
class Span:
    """The chosen range: ``[since, until)`` in buckets of ``step`` seconds."""

    choice: str
    since: float
    until: float
    step: int
    offset: int  # the browser's minutes east of UTC (0 without script)
    first: str = ""  # a custom range's dates, as the form shows them
    last: str = ""

    @staticmethod
    def iso(at: float) -> str:
        return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SpanError(ValueError):
    pass


def choose_span(query: dict[str, str], now: float) -> Span:
    """The span a dashboard URL asks for (``range``, ``from``/``to`` local dates,
    ``tz`` minutes east of UTC); buckets of an hour or a day, aligned on the
    browser's hours and midnights."""
    try:
        offset = max(-MAX_OFFSET, min(MAX_OFFSET, int(query.get("tz") or 0)))
    except ValueError:
        offset = 0
    shift = offset * 60
    choice = query.get("range") or "24h"
    if choice == "custom":
        first, last = _date(query.get("from"), _("start")), _date(query.get("to"), _("end"))
        if last < first:
            raise SpanError(_("The range ends before it starts."))
        days = (last - first).days + 1
        if days > MAX_CUSTOM_DAYS:
            raise SpanError(_("Choose at most %(count)s days.", count=MAX_CUSTOM_DAYS))
        since = datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp() - shift
        step = HOUR if days <= 2 else DAY
        return Span(choice, since, since + days * DAY, step, offset, first.isoformat(), last.isoformat())
    if choice not in RANGES:
        choice = "24h"
    _label, step, count = RANGES[choice]
    until = math.floor((now + shift) / step) * step - shift + step  # the end of the current hour or day
    return Span(choice, until - count * step, until, step, offset)


def _date(text: str | None, what: str) -> date:
    try:
        return date.fromisoformat((text or "").strip())
    except ValueError:
        raise SpanError(_("Give the range's %(what)s as a date (YYYY-MM-DD).", what=what)) from None


def add_up(points: list[tuple[float, UsageTotal]]) -> UsageTotal:
    return UsageTotal(
        None, *(sum(getattr(total, name) for _, total in points) for name in ("requests", "input_tokens", "output_tokens", "cost_micros", "errors"))
    )  # fmt: skip


@page()
async def dashboard(ctx: Ctx) -> Response:
    query = dict(ctx.request.query_params)
    chosen = await chosen_team(ctx, query.get("team", ""))
    site = ctx.user.is_admin and query.get("view", "site") != "mine" and chosen is None
    try:
        span = choose_span(query, time.time())
    except SpanError as exc:
        span, error = choose_span({"tz": query.get("tz", "")}, time.time()), str(exc)
    else:
        error = None
    owner = chosen.account_id if chosen else None if site else ctx.user.id
    started = time.perf_counter()
    groupings = ("model", "member", "key") if chosen else ("model", "user", "channel") if site else ("model", "key")
    series, *totals = await asyncio.gather(
        usage.usage_series(ctx.admin, span.since, span.until, span.step, user_id=owner),
        *(usage.usage_totals(ctx.admin, by, span.since, until=span.until, user_id=owner) for by in groupings),
    )
    health = await channels.channel_statuses(ctx.admin, in_flight=ctx.services.health.in_flight()) if site else []
    elapsed_ms = (time.perf_counter() - started) * 1000
    return ctx.render(
        "dashboard.html", span=span, ranges=RANGES, site=site, error=error, total=add_up(series),
        charts=usage_charts(series, span.step), breakdowns=list(zip(groupings, totals)), health=health,
        elapsed_ms=elapsed_ms, status=400 if error else 200, team=chosen, teams=await teams.list_teams(ctx.admin, caller=ctx.user),
    )  # fmt: skip
