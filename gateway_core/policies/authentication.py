"""Finds the API key by the hash of the secret the client sent."""

from __future__ import annotations

from ..request.context import RequestContext
from ..errors import AuthenticationError
from ..gateway import Gateway
from ..policy import Policy
from ..secrets import hash_key


class Authentication(Policy):
    name = "authentication"
    order = 100

    async def admit(self, ctx: RequestContext, gateway: Gateway) -> None:
        record = await gateway.keys.get(hash_key(ctx.secret or ""))
        if record is None:
            raise AuthenticationError(
                "Incorrect API key provided. Check the key, or create a new one in the console.",
                code="invalid_api_key",
            )
        ctx.key = record
