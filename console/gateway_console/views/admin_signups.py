"""Sign-ups waiting for approval (``docs/teams.md#self-sign-up``), on the users page:
a site admin approves one (its user is made, in the sign-up's default group, team
and role) or rejects it, through the admin layer (:mod:`gateway_core.admin.signups`),
with the same rules and messages as ``relaygate user approve|reject`` and the
management API's ``/api/v1/signups``."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import Conflict, signups

from ..web import Ctx, page
from .admin_users import users_page


@page(admin=True)
async def signup_approve(ctx: Ctx) -> Response:
    signup_id = ctx.path_int("signup_id")
    before = await signups.get_signup(ctx.admin, signup_id, caller=ctx.user)
    try:
        after, user = await signups.approve_signup(ctx.admin, signup_id, caller=ctx.user)
    except Conflict as exc:  # decided already, or the name is a user's
        return await users_page(ctx, 409, signup_error=str(exc))
    await ctx.audit("user.create", f"user {user.id}", None, user)
    await ctx.audit("signup.approve", f"signup {signup_id}", before, after)
    return ctx.redirect("/admin/users", "saved")


@page(admin=True)
async def signup_reject(ctx: Ctx) -> Response:
    signup_id = ctx.path_int("signup_id")
    before = await signups.get_signup(ctx.admin, signup_id, caller=ctx.user)
    try:
        after = await signups.reject_signup(ctx.admin, signup_id, caller=ctx.user)
    except Conflict as exc:
        return await users_page(ctx, 409, signup_error=str(exc))
    await ctx.audit("signup.reject", f"signup {signup_id}", before, after)
    return ctx.redirect("/admin/users", "saved")
