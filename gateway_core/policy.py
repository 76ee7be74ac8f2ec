"""The policy pipeline: small checks every gateway request passes in order.

A policy is registered through the ``register_policies`` hook. ``admit`` runs
before any upstream is called and raises a ``GatewayError`` to refuse the
request; ``finish`` runs once the request is over (whatever its outcome) for
policies that hold something (a concurrency slot, a reservation). Policies are
ordered by ``order``: authentication 100, key state 200, IP allow list 300,
group and model 400, quota and balance 500, rate limits 600.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import RequestContext
    from .services import Services


class Policy:
    """Base class of a policy: override what you need."""

    name: str = "policy"
    order: int = 1000

    async def admit(self, ctx: RequestContext, services: Services) -> None:
        """Check the request; raise a ``GatewayError`` to refuse it."""

    async def finish(self, ctx: RequestContext, services: Services) -> None:
        """Release what ``admit`` took. Called only for policies that admitted."""


class Pipeline:
    """The ordered policies of an app."""

    __slots__ = ("policies", "_finishers")

    def __init__(self, policies: Sequence[Policy]) -> None:
        self.policies = tuple(sorted(policies, key=lambda p: p.order))
        self._finishers = frozenset(
            p.name for p in self.policies if type(p).finish is not Policy.finish
        )

    async def admit(self, ctx: RequestContext, services: Services) -> list[Policy]:
        """Run every policy's ``admit``; return those that need ``finish``.

        When a policy refuses, the ones admitted before it are finished at once.
        """
        admitted: list[Policy] = []
        try:
            for policy in self.policies:
                await policy.admit(ctx, services)
                if policy.name in self._finishers:
                    admitted.append(policy)
        except BaseException:
            await self.finish(admitted, ctx, services)
            raise
        return admitted

    @staticmethod
    async def finish(admitted: list[Policy], ctx: RequestContext, services: Services) -> None:
        for policy in reversed(admitted):
            await policy.finish(ctx, services)
