"""The policy pipeline: small checks every gateway request passes in order.

A policy is registered through the ``register_policies`` hook. ``admit`` runs
before any upstream is called and raises a ``GatewayError`` to refuse the
request; ``finish`` runs once the request is over (whatever its outcome) for
policies that hold something (a concurrency slot), with the request's usage-log
row in ``ctx.row``. The admission lives on the request's context
(``ctx.admitted``): its settlement finishes every policy that admitted it, a
refused request included. Policies are
ordered by ``order``: authentication 100, key state 200, IP allow list 300,
group and model 400, quota and balance 500, rate limits 600.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import GatewayError

if TYPE_CHECKING:
    from .request.context import RequestContext
    from .gateway import Gateway


class Policy:
    """Base class of a policy: override what you need."""

    name: str = "policy"
    order: int = 1000

    async def admit(self, ctx: RequestContext, gateway: Gateway) -> None:
        """Check the request; raise a ``GatewayError`` to refuse it. ``gateway``
        is what a policy may use of the gateway (``gateway_core.gateway.Gateway``)."""

    async def finish(self, ctx: RequestContext, gateway: Gateway) -> None:
        """Release what ``admit`` took, once the request is over (``ctx.row`` is
        its usage-log row). Called only for policies that admitted."""


class Pipeline:
    """The ordered policies of an app."""

    __slots__ = ("policies", "_finishers")

    def __init__(self, policies: Sequence[Policy]) -> None:
        self.policies = tuple(sorted(policies, key=lambda p: p.order))
        self._finishers = frozenset(
            p.name for p in self.policies if type(p).finish is not Policy.finish
        )

    async def admit(self, ctx: RequestContext, gateway: Gateway) -> None:
        """Run every policy's ``admit`` in order, keeping in ``ctx.admitted`` those
        that need ``finish``; a refusal (a ``GatewayError``) ends the run, the
        refusing policy named in ``ctx.refused_by``. Whatever
        happens, the request's settlement calls :meth:`finish`."""
        admitted, finishers = ctx.admitted, self._finishers
        for policy in self.policies:
            try:
                await policy.admit(ctx, gateway)
            except GatewayError:
                ctx.refused_by = policy.name
                raise
            if policy.name in finishers:
                admitted.append(policy)

    @staticmethod
    async def finish(ctx: RequestContext, gateway: Gateway) -> None:
        """Finish the admitted policies, the last admitted first, each once."""
        admitted = ctx.admitted
        while admitted:
            await admitted.pop().finish(ctx, gateway)
