"""Reserves a request's maximum cost before any upstream call.

``admit`` (order 500) looks the model's price (or its most specific price
variant) up in memory. A free model passes
with no write. A model with no price is refused (403 ``model_not_priced``)
unless no channel serves it (the router then says so). Otherwise the maximum
cost — input tokens estimated locally, output capped by the call's
:class:`~gateway_core.client_protocol.BillingHints` or ``[gateway]
default_max_output_tokens``, the images, characters or audio the request will
use (:mod:`gateway_core.billing.charge`) — is reserved in one store write
against the user's balance and the key's quota together, or the request is
refused with 429 ``insufficient_quota`` naming which of the two is short.

When this process's last reservation for the user left a balance that covers
this one many times over (and the key has no quota and no budgets), the write
goes beside the upstream call instead of before it; the relay waits for it
before the answer's first byte (:mod:`gateway_core.request.reservation`).

The reservation stays on the context (``ctx.charge``); the settlement
(:mod:`gateway_core.request.settlement`) prices what the request used into its usage row,
and the recorder settles it (release the reservation, capture the cost) in the
same transaction as the row.
"""

from __future__ import annotations

from .. import endpoints
from ..billing.budgets import BudgetUse, budget_uses
from ..billing.charge import Charge, max_request_cost, price_for
from ..records import NO_BUDGETS
from ..request.context import RequestContext
from ..errors import InsufficientQuotaError, PermissionDeniedError
from ..money import format_usd
from ..gateway import Gateway
from ..policy import Policy
from ..store.request_store import HoldRefused
from ..request.reservation import BalanceMargins, sole_writer
from .budget_refusal import budget_refusal

DEFAULT_MAX_OUTPUT_TOKENS = 4096
# no wallet holds a billion USD: a reservation beyond it (max_tokens near 2**63) is refused
# here, before the store, whose 64-bit columns it would overflow
MAX_HOLD_MICROS = 10**15
FREE_ENDPOINTS = frozenset({endpoints.MODELS, endpoints.COUNT_TOKENS})


class Quota(Policy):
    name = "quota"
    order = 500

    def __init__(self, default_max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS) -> None:
        self.default_max_output_tokens = default_max_output_tokens
        self.margins = BalanceMargins()  # when the write may go beside the upstream call (reservation.py)
        self.overlap: bool | None = None  # whether it may at all: this process is the store's sole writer

    def _may_overlap(self, gateway: Gateway) -> bool:
        if self.overlap is None:
            self.overlap = sole_writer(gateway.sql.dialect)
        return self.overlap

    async def admit(self, ctx: RequestContext, gateway: Gateway) -> None:
        call = ctx.call
        if call is None or not call.model or call.endpoint in FREE_ENDPOINTS:
            return  # listing models and counting tokens cost nothing
        model, hints = call.model, call.billing
        book = gateway.prices
        assert book is not None  # Services.build always sets it
        snapshot = book.fresh() or await book.load()
        price = price_for(snapshot.prices, model, hints)
        key = ctx.authenticated_key()
        if price is None:
            index = await gateway.router.index()
            if (key.group, model) not in index.by_group_model:
                return  # no channel serves it: the router refuses with its own error
            raise PermissionDeniedError(
                f"The model '{model}' has no price on this gateway, so requests to it cannot be billed. "
                "Ask the gateway's operator to set its price (or to mark it free).",
                code="model_not_priced",
            )
        if price.free:
            return
        ratio = snapshot.ratio(key.group)
        needed = max_request_cost(
            price, ratio, endpoint=call.endpoint, hints=hints,
            input_tokens=ctx.estimated_input_tokens(), default_max_output=self.default_max_output_tokens,
        )
        if needed > MAX_HOLD_MICROS:
            max_output = hints.max_output_tokens or self.default_max_output_tokens
            raise InsufficientQuotaError(
                f"This request may cost up to {format_usd(needed)} USD (for up to {max_output} output tokens), "
                "more than any balance can cover: lower max_tokens.",
                code="insufficient_quota",
            )
        # set before the write: a request cancelled while waiting for it still settles (releases) it
        ctx.charge = Charge(user_id=key.user_id, key_id=key.id, price=price, ratio_ppm=ratio, held_micros=needed, hints=hints)
        budgets: tuple[BudgetUse, ...] = ()
        if key.budgets != NO_BUDGETS or key.user_budgets != NO_BUDGETS:
            config = gateway.config
            budgets = budget_uses(key, gateway.clock(), timezone=config.budget_timezone, window=config.budget_window)
        if needed:
            try:
                if budgets:
                    await gateway.store.hold_within_budgets(key.user_id, needed, ctx.request_id, key.id, budgets)
                elif key.quota_micros is None and self._may_overlap(gateway) and self.margins.covers(key.user_id, needed):
                    max_output = hints.max_output_tokens or self.default_max_output_tokens
                    hold = _hold(gateway, key.user_id, needed, ctx.request_id, key.id, max_output, key.team_id is not None)
                    self.margins.start(ctx, key.user_id, needed, hold)  # the relay confirms it before answering
                else:  # counted in flight meanwhile: a margin seen now must not count this money twice
                    started = self.margins.reserving(key.user_id, needed)
                    available = None
                    try:
                        available = await gateway.store.hold(key.user_id, needed, ctx.request_id, key.id)
                    finally:
                        self.margins.reserved(key.user_id, needed, available, started)
            except Exception as failed:  # refused, or the write failed: nothing is held
                ctx.charge = None
                self.margins.forget(key.user_id)
                if isinstance(failed, HoldRefused):
                    max_output = hints.max_output_tokens or self.default_max_output_tokens
                    team = key.team_id is not None
                    if failed.what == "budget":
                        raise budget_refusal(failed, gateway.clock(), max_output, team=team) from None
                    raise _refusal(failed, max_output, team) from None
                raise


async def _hold(gateway: Gateway, user_id: int, needed: int, request_id: str, key_id: int, max_output: int, team: bool) -> int:
    """The reservation written beside the upstream call: its refusal as the client's error."""
    try:
        return await gateway.store.hold(user_id, needed, request_id, key_id)
    except HoldRefused as refused:
        raise _refusal(refused, max_output, team) from None


def _refusal(refused: HoldRefused, max_output: int, team: bool = False) -> InsufficientQuotaError:
    needed = format_usd(refused.needed)
    if refused.what == "key_quota":
        message = (
            f"This API key has used {format_usd(refused.used)} USD of its {format_usd(refused.limit)} USD quota"
            + (f" ({format_usd(refused.held)} USD more is reserved by requests in progress)" if refused.held else "")
            + f"; this request may cost up to {needed} USD (for up to {max_output} output tokens). "
            "Ask for a higher key quota, lower max_tokens, or use another key."
        )
    elif team:  # a team's key: the team's wallet pays (docs/teams.md)
        message = (
            f"Your team's wallet is too low: {format_usd(refused.limit)} USD left, and this request may cost up to "
            f"{needed} USD (for up to {max_output} output tokens). Ask for a top-up of the team's wallet, or lower max_tokens."
        )
    else:
        message = (
            f"Your balance is too low: {format_usd(refused.limit)} USD left, and this request may cost up to "
            f"{needed} USD (for up to {max_output} output tokens). Top up your balance, or lower max_tokens."
        )
    return InsufficientQuotaError(message, code="insufficient_quota")
