"""The models the signed-in user can call, with their prices after the group's ratio."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import prices

from ..web import Ctx, page


@page()
async def model_list(ctx: Ctx) -> Response:
    return ctx.render("models.html", models=await prices.models_for_user(ctx.admin, ctx.user.id))
