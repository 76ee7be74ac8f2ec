"""Model fallbacks: when every channel of the model a request asked for failed
before its first byte (or none could be tried), the request goes on with the
fallback model its key (or its key's group) declares, ``model-a → model-b``
(set with ``relaygate fallback set``; :mod:`gateway_core.admin.fallbacks`).

The fallback is served by its own channels, with its own count of attempts
within the request's deadline, and billed at its own price; the usage log
keeps the model asked for (``model``) and the one that served
(``served_model``). One hop only. A fallback is not taken when it has no
price, when it is priced but the model asked for was free (nothing was
reserved to pay for it), or when no channel of the key's group serves it.
Nothing of this costs a request that does not need a fallback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import LoggerWhenUsed
from ..errors import GatewayError
from ..store.request_store import ModelFallback as ModelFallback  # a value of the store's ports, read by the router; imported from here too

if TYPE_CHECKING:
    from ..request.context import RequestContext
    from .failover import AttemptPlan
    from ..gateway import Gateway

log = LoggerWhenUsed("relaygate.fallbacks")


async def fall_back(gateway: Gateway, ctx: RequestContext, plan: AttemptPlan) -> bool:
    """Switch ``plan`` to the fallback of the model asked for; ``False`` when there is none to take."""
    call, key = ctx.call, ctx.key
    if ctx.served_model is not None or call is None or key is None:
        return False
    fallback = await gateway.router.fallback_for(key, call.model)
    if fallback is None:
        return False
    price = None
    if gateway.prices is not None:
        book = gateway.prices.fresh() or await gateway.prices.load()
        price = book.prices.get(fallback)
    if price is None or (ctx.charge is None and not price.free):
        log.warning("model fallback not taken: it cannot be billed", model=call.model, fallback=fallback,
                    reason="no price" if price is None else "the model asked for is free: nothing was reserved")  # fmt: skip
        return False
    try:
        routes = await gateway.router.candidates(key, fallback, call.endpoint)
    except GatewayError as refused:
        log.warning("model fallback not taken", model=call.model, fallback=fallback, reason=refused.message)
        return False
    if ctx.charge is not None:
        ctx.charge.price = price
    ctx.served_model = fallback
    log.info("model fallback", model=call.model, fallback=fallback)
    plan.switch(fallback, routes)
    return True
