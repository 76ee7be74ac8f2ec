"""Refuses models the key may not use, before any quota is reserved.

An unknown model (served by no enabled channel) is 400 ``model_not_found``; a
model outside the key's restriction or its group is 403 ``model_not_allowed``
saying why. With ``[gateway] hide_forbidden_models`` the latter answer as the
former ("not found or not permitted for this key").
The router's channel index — an in-memory snapshot rebuilt at most once a
second — knows which models exist and which groups they serve: no store call.
"""

from __future__ import annotations

from ..request.context import RequestContext
from ..gateway import Gateway
from ..policy import Policy
from ..routing.router import model_refusal


class ModelAccess(Policy):
    name = "model_access"
    order = 400

    def __init__(self, hide: bool = False) -> None:
        self.hide = hide  # [gateway] hide_forbidden_models

    async def admit(self, ctx: RequestContext, gateway: Gateway) -> None:
        call = ctx.call
        if call is None or not call.model:  # listing models: the router filters them
            return
        index = await gateway.router.index()
        refusal = model_refusal(index, ctx.authenticated_key(), call.model, hide=self.hide)
        if refusal is not None:
            raise refusal
