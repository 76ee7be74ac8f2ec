"""The playground: chat with a model through one of the user's keys, streamed,
with each turn's tokens, cost and request id.

Keys are stored hashed, so the console cannot use a key by itself: the user
pastes the key's secret, which stays in the page (never stored, never sent to
the console) and goes only to the gateway's own ``/v1/chat/completions`` on this
origin, as any client's would. The request is therefore the key's in every
respect (its group, model restriction, limits, quota and log). Each turn's cost
is read afterwards from the user's own log (``/api/v1/usage?request_id=``, with
the console's session), once the gateway has settled the request.
"""

from __future__ import annotations

import time

from starlette.responses import Response

from gateway_core.admin import keys

from ..sessions import MOUNT_PATH
from ..web import Ctx, page


@page()
async def playground(ctx: Ctx) -> Response:
    now = time.time()
    index = await ctx.services.router.index()
    served = getattr(index, "group_models", {})
    usable = []
    for key in await keys.list_keys(ctx.admin, ctx.user.id):
        if not key.enabled or (key.expires_at is not None and key.expires_at <= now):
            continue
        models = sorted(model for model in served.get(key.group, ()) if not key.models or model in key.models)
        usable.append((key, models))
    root = ctx.base[: -len(MOUNT_PATH)] if ctx.base.endswith(MOUNT_PATH) else ""  # the gateway's own paths
    return ctx.render("playground.html", keys=usable, root=root)
