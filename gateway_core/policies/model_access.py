"""Refuses models the key may not use, before any quota is reserved.

Unknown models (served by no enabled channel) are a 400 ``model_not_found``;
models outside the key's restriction or its group a 403 ``model_not_allowed``.
The router's channel index — an in-memory snapshot rebuilt at most once a
second — knows which models exist and which groups they serve: no store call.
"""

from __future__ import annotations

from ..context import RequestContext
from ..policy import Policy
from ..router import model_refusal


class ModelAccess(Policy):
    name = "model_access"
    order = 400

    async def admit(self, ctx: RequestContext, services) -> None:
        call = ctx.call
        if call is None or not call.model:  # listing models: the router filters them
            return
        index = await services.router.index()
        refusal = model_refusal(index, ctx.authenticated_key(), call.model)
        if refusal is not None:
            raise refusal
