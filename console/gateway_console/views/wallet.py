"""The wallet: balance, ledger changes (keyset-paginated) and 30 days of spending."""

from __future__ import annotations

import sqlite3
from typing import Any

from starlette.responses import Response

from gateway_core.store.wallet import get_balance, list_ledger

from .. import queries
from ..chart import spending_chart, window_start
from ..web import Ctx, page

PAGE_SIZE = 50


def _wallet(conn: sqlite3.Connection, user_id: int, before: int | None, since: float) -> dict[str, Any]:
    ledger = list_ledger(conn, user_id, before_id=before, limit=PAGE_SIZE + 1)
    return {
        "balance": get_balance(conn, user_id),
        "ledger": ledger[:PAGE_SIZE],
        "more": len(ledger) > PAGE_SIZE,
        "spending": queries.daily_spending(conn, since, user_id),
    }


@page()
async def wallet(ctx: Ctx) -> Response:
    before_text = ctx.request.query_params.get("before", "")
    before = int(before_text) if before_text.isdigit() else None
    first, since = window_start()
    data = await ctx.read(_wallet, ctx.user.id, before, since)
    older = ctx.url(f"/wallet?before={data['ledger'][-1]['id']}") if data["more"] else None
    chart = spending_chart(data["spending"], first)
    return ctx.render("wallet.html", chart=chart, older=older, paged=before is not None, **data)
