"""The wallet: balance, ledger changes (keyset-paginated) and 30 days of spending."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import usage, wallet as wallets

from ..chart import spending_chart, window_start
from ..web import Ctx, page

PAGE_SIZE = 50


@page()
async def wallet(ctx: Ctx) -> Response:
    before_text = ctx.request.query_params.get("before", "")
    before = int(before_text) if before_text.isdigit() else None
    first, since = window_start()
    found = await wallets.wallet(ctx.admin, ctx.user.id, before_id=before, limit=PAGE_SIZE)
    spending = await usage.daily_spending(ctx.admin, since, ctx.user.id)
    older = ctx.url(f"/wallet?before={found.ledger[-1].id}") if found.more else None
    return ctx.render(
        "wallet.html", chart=spending_chart(spending, first), older=older, paged=before is not None,
        balance=found.user.balance_micros, held=found.held_micros, open_holds=found.open_holds,
        available=found.available_micros, ledger=found.ledger,
    )  # fmt: skip
