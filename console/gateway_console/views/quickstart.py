"""Copy-and-paste snippets for each kind of client, with this gateway's real address."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import prices

from ..web import Ctx, page


def gateway_origin(ctx: Ctx) -> str:
    """``scheme://host[:port]`` as the browser reached the gateway."""
    request = ctx.request
    host = request.headers.get("host") or (f"{request.url.hostname}:{request.url.port}")
    return f"{request.url.scheme}://{host}"


@page()
async def quickstart(ctx: Ctx) -> Response:
    # what the Models page lists as callable: served to the user's groups and priced (or free)
    models = sorted({offer.model for offer in await prices.models_for_user(ctx.admin, ctx.user.id) if offer.price is not None})
    model = models[0] if models else "demo-chat"
    return ctx.render("quickstart.html", origin=gateway_origin(ctx), model=model, models=models)
