"""The wallet: balance, budgets and their resets, ledger changes (one row per
charged request, linked to its log; top-ups, redemptions, adjustments; keyset-
paginated, or the rows of one request), 30 days of spending, and a form to
redeem a code."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import budgets, codes, usage, wallet as wallets

from ..chart import spending_chart, window_start
from ..forms import text
from ..web import Ctx, page

PAGE_SIZE = 50


@page()
async def wallet(ctx: Ctx) -> Response:
    return await _wallet_page(ctx)


async def _wallet_page(ctx: Ctx, error: str | None = None, status: int = 200) -> Response:
    query = ctx.request.query_params
    before = int(query["before"]) if query.get("before", "").isdigit() else None
    request_id = query.get("request", "").strip()[:200]
    first, since = window_start()
    found = await wallets.wallet(ctx.admin, ctx.user.id, before_id=before, limit=PAGE_SIZE)
    spending = await usage.daily_spending(ctx.admin, since, ctx.user.id)
    older = ctx.url(f"/wallet?before={found.ledger[-1].id}") if found.more and not request_id else None
    ledger = await wallets.request_ledger(ctx.admin, request_id, owner=ctx.user.id) if request_id else found.ledger
    config = ctx.services.config
    caps = await budgets.budget_status(ctx.admin, ctx.user.id, timezone=config.budget_timezone, window=config.budget_window)
    return ctx.render(
        "wallet.html", status=status, chart=spending_chart(spending, first), older=older,
        paged=before is not None or bool(request_id), request_id=request_id,
        balance=found.user.balance_micros, held=found.held_micros, open_holds=found.open_holds,
        available=found.available_micros, ledger=ledger, redeem_error=error, budgets=caps,
    )  # fmt: skip


@page()
async def redeem(ctx: Ctx) -> Response:
    """Credit a redemption code to the signed-in user (failed attempts are throttled)."""
    code = text(ctx.form, "code", max_length=100)
    address = ctx.services.client_address(ctx.request.scope)
    try:
        await codes.redeem_code(ctx.admin, ctx.user.id, code, address=address, throttle=ctx.services.redeem)
    except codes.RedeemRefused as refused:
        return await _wallet_page(ctx, error=refused.message, status=429 if refused.reason == "throttled" else 400)
    return ctx.redirect("/wallet", "redeemed")
