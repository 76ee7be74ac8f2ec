"""Refuses keys that are deleted, disabled, expired, or whose owner is disabled."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from ..request.context import RequestContext
from ..errors import AuthenticationError
from ..gateway import Gateway
from ..policy import Policy


class KeyState(Policy):
    name = "key_state"
    order = 200

    async def admit(self, ctx: RequestContext, gateway: Gateway) -> None:
        key = ctx.authenticated_key()
        if key.deleted:
            raise AuthenticationError("This API key has been deleted.", code="invalid_api_key")
        if not key.enabled:
            raise AuthenticationError("This API key is disabled.", code="invalid_api_key")
        if key.expires_at is not None and key.expires_at <= time.time():
            when = datetime.fromtimestamp(key.expires_at, timezone.utc).isoformat(timespec="seconds")
            raise AuthenticationError(f"This API key expired at {when}.", code="invalid_api_key")
        if not key.user_enabled:
            raise AuthenticationError("The account that owns this API key is disabled.", code="account_disabled")
