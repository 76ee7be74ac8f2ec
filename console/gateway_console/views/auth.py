"""Signing in and out, and changing one's password."""

from __future__ import annotations

import asyncio
import functools

from starlette.responses import RedirectResponse, Response

from gateway_core.admin import users
from gateway_core.ratelimit import SignInThrottled, SignInThrottleUnavailable
from gateway_core.secrets import hash_password, verify_password

from .. import queries
from ..i18n import _, n_
from ..forms import text
from ..sessions import CSRF_FIELD, MOUNT_PATH, SESSION_COOKIE, SIGNIN_COOKIE, new_token, session_id
from ..sso.state import after_sign_out, password_allowed, sso_of
from ..web import Ctx, now, page, safe_next


@functools.cache
def _decoy_hash() -> str:
    """Checked against when the user does not exist, so both cases take as long."""
    return hash_password("relaygate-console-decoy")


def _cookie(ctx: Ctx, response: Response, name: str, value: str, max_age: int, path: str | None = None) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path=path or ctx.base or "/", httponly=True, samesite="lax",
        secure=ctx.secure_cookies(),
    )  # fmt: skip


@page(public=True)
async def home(ctx: Ctx) -> Response:
    return ctx.redirect("/dashboard" if ctx.viewer else "/login")


def _signin_form(ctx: Ctx, status: int = 200, error: str | None = None, name: str = "") -> Response:
    nonce = ctx.request.cookies.get(SIGNIN_COOKIE) or new_token()
    response = ctx.render(
        "login.html", status=status, error=error, name=name, signin_csrf=ctx.signer.signin_csrf(nonce),
        next=ctx.request.query_params.get("next", ""), sso=sso_of(ctx), password_form=True,
    )  # fmt: skip
    _cookie(ctx, response, SIGNIN_COOKIE, nonce, 3600)
    return response


@page(public=True)
async def sign_in_page(ctx: Ctx) -> Response:
    if ctx.viewer is not None:
        return ctx.redirect("/dashboard")
    return _signin_form(ctx)


@page(public=True)
async def sign_in(ctx: Ctx) -> Response:
    form = ctx.form
    if not ctx.signer.check_signin_csrf(ctx.request.cookies.get(SIGNIN_COOKIE), form.get(CSRF_FIELD)):
        return ctx.error(403, _("The sign-in form's security token is missing or wrong: reload the page and try again."))
    name = text(form, "name", max_length=200)
    password = str(form.get("password") or "")
    if not password_allowed(ctx, name):
        return _signin_form(ctx, 403, _("Password sign-in is off here: sign in through single sign-on."), name)
    address = ctx.services.client_address(ctx.request.scope) or "unknown"
    throttle = ctx.services.signin
    try:
        await throttle.attempt(name, address, ctx.state.signin_rule)
    except SignInThrottled as refused:
        wait = refused.retry_after
        message = _("Too many failed sign-ins from your address: wait %(time)s and try again.", time=_duration(wait))
        response = _signin_form(ctx, 429, message, name)
        response.headers["Retry-After"] = str(wait)
        return response
    except SignInThrottleUnavailable:
        response = _signin_form(ctx, 503, _("Signing in is unavailable for a moment: try again in a few seconds."), name)
        response.headers["Retry-After"] = "5"
        return response
    record = await queries.sign_in_record(ctx.sql, name) if name else None
    stored = record[1] if record and record[1] else _decoy_hash()
    ok = await asyncio.to_thread(verify_password, password, stored)
    if not (ok and record and record[1]):
        return _signin_form(ctx, 401, _("Wrong user name or password."), name)
    await throttle.succeeded(name, address)
    response = RedirectResponse(safe_next(ctx.base, form.get("next")), status_code=303)
    await _start_session(ctx, response, record[0], address)
    response.delete_cookie(SIGNIN_COOKIE, path=ctx.base or "/")
    return response


def _duration(seconds: int) -> str:
    """``1 second``, ``45 seconds``, ``5 minutes`` (rounded up)."""
    if seconds < 120:
        return n_("%(n)s second", "%(n)s seconds", seconds)
    return n_("%(n)s minute", "%(n)s minutes", -(-seconds // 60))


async def _start_session(ctx: Ctx, response: Response, user_id: int, address: str) -> None:
    """A new session for ``user_id``, its cookie set on ``response``."""
    token = new_token()
    seconds = int(ctx.state.session_seconds)
    await queries.create_session(ctx.sql, session_id(token), user_id, now() + seconds, address)
    _cookie(ctx, response, SESSION_COOKIE, ctx.signer.session_cookie(token), seconds, _session_path(ctx))


@page()
async def sign_out(ctx: Ctx) -> Response:
    await queries.delete_session(ctx.sql, session_id(ctx.user.token))
    response = ctx.redirect("/login", "signed-out")
    response.delete_cookie(SESSION_COOKIE, path=_session_path(ctx))
    return await after_sign_out(ctx, response)


@page()
async def account(ctx: Ctx) -> Response:
    if ctx.request.method == "GET":
        return ctx.render("account.html", error=None)
    form = ctx.form
    current, new, again = (str(form.get(n) or "") for n in ("current", "new", "again"))
    record = await queries.sign_in_record(ctx.sql, ctx.user.name)
    if not record or not await asyncio.to_thread(verify_password, current, record[1]):
        return ctx.render("account.html", status=400, error=_("The current password is wrong."))
    if len(new) < users.MIN_PASSWORD or new != again:
        error = _("The new password needs %(count)s characters or more, typed the same twice.", count=users.MIN_PASSWORD)
        return ctx.render("account.html", status=400, error=error)
    await users.set_password(ctx.admin, ctx.user.id, new)  # ends every session of the user's, this one too
    await ctx.audit("user.password", f"user {ctx.user.id}", None, {"password": "changed"})
    response = ctx.redirect("/account", "password")
    await _start_session(ctx, response, ctx.user.id, ctx.services.client_address(ctx.request.scope) or "unknown")
    return response


def _session_path(ctx: Ctx) -> str:
    """The session cookie's path: the gateway's root, so the management API
    (``/api/v1/``) reads the session too (the sign-in nonce stays under the console)."""
    return ctx.base.removesuffix(MOUNT_PATH) or "/"
