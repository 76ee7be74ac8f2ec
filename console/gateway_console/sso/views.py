"""Signing in through the company's OpenID provider, and out of it
(``docs/teams.md#single-sign-on``).

``/sso/login`` sends the browser to the provider with a new state, nonce and PKCE
verifier, kept sealed (encrypted and signed with the console's secret) in a
short-lived cookie; ``/sso/callback`` checks the state, exchanges the code, checks
the ID token, makes or updates the user and their teams through the admin layer
(:mod:`gateway_core.admin.sso_users`) and starts a console session, as a password
sign-in does (or, when self sign-up waits for approval, shows that it waits). Signing out of a session begun here goes on to the provider's
end-session endpoint."""

from __future__ import annotations

import hmac
import json

import attrs
from starlette.responses import RedirectResponse, Response

from gateway_core.admin.sso_users import Pending, Refused, SignOn, sign_on

from ..i18n import _
from ..views.auth import _start_session  # one way to start a session, for both sign-ins
from ..web import Ctx, page, safe_next
from .oidc import Flow, SignOnFailed
from .settings import SsoSettings
from .state import ID_TOKEN_COOKIE, log, public_url, sso_of, state_of

FLOW_COOKIE = "rg_sso_flow"  # the sign-in under way, from /sso/login to /sso/callback
FLOW_SECONDS = 600


@page(public=True)
async def start(ctx: Ctx) -> Response:
    settings = sso_of(ctx)
    if settings is None:
        return ctx.not_found()
    flow = Flow.new(ctx.request.query_params.get("next", ""))
    try:
        target = await state_of(ctx).provider_for(ctx).authorization_url(flow, _redirect_uri(ctx, settings))
    except SignOnFailed as exc:
        return _failed(ctx, exc)
    response = RedirectResponse(target, status_code=303)
    sealed = ctx.signer.seal(json.dumps(attrs.asdict(flow)), FLOW_COOKIE)
    response.set_cookie(FLOW_COOKIE, sealed, max_age=FLOW_SECONDS, path=ctx.url("/sso"), httponly=True, samesite="lax", secure=ctx.secure_cookies())
    return response


@page(public=True)
async def callback(ctx: Ctx) -> Response:
    settings = sso_of(ctx)
    if settings is None:
        return ctx.not_found()
    params = ctx.request.query_params
    opened = ctx.signer.unseal(ctx.request.cookies.get(FLOW_COOKIE), FLOW_COOKIE, FLOW_SECONDS)
    if opened is None:
        return _refused(ctx, 400, _("This sign-in was not started here, or took too long: sign in again."))
    flow = Flow(**json.loads(opened))
    if not hmac.compare_digest(params.get("state", "").encode(), flow.state.encode()):
        return _refused(ctx, 400, _("The identity provider's answer does not belong to this sign-in (its state differs): sign in again."))
    if params.get("error"):
        return _refused(ctx, 401, _("The identity provider refused the sign-in: %(error)s.", error=params.get("error_description") or params["error"]))
    provider = state_of(ctx).provider_for(ctx)
    try:
        await provider.check_response_issuer(params.get("iss"))
        id_token, claims = await provider.exchange(params.get("code", ""), flow, _redirect_uri(ctx, settings))
    except SignOnFailed as exc:
        return _failed(ctx, exc)
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email or claims.get("email_verified") is False:
        return _refused(ctx, 403, _("The identity provider gave no verified email address for you."))
    if not settings.domain_allowed(email):
        return _refused(ctx, 403, _("Accounts of %(domain)s may not sign in here.", domain=email.rpartition("@")[2]))
    name = email if settings.name_claim == "email" else str(claims.get(settings.name_claim) or "")
    person = SignOn(name, settings.memberships(claims.get(settings.groups_claim)), settings.managed_teams)
    try:
        user = await sign_on(ctx.admin, person, settings.signup, request_id=ctx.request.scope.get("relaygate.request_id"))
    except Pending:  # self sign-up waits for a site admin: nothing is theirs yet, no session
        log.info("sso.pending", name=person.name)
        waiting = ctx.render("signup_pending.html", status=202, name=person.name)
        waiting.delete_cookie(FLOW_COOKIE, path=ctx.url("/sso"))
        return waiting
    except Refused as exc:
        return _refused(ctx, 403, str(exc))
    response = RedirectResponse(safe_next(ctx.base, flow.next), status_code=303)
    await _start_session(ctx, response, user.id, ctx.services.client_address(ctx.request.scope) or "unknown")
    response.delete_cookie(FLOW_COOKIE, path=ctx.url("/sso"))
    hint = ctx.signer.seal(id_token, ID_TOKEN_COOKIE)
    response.set_cookie(ID_TOKEN_COOKIE, hint, max_age=int(ctx.state.session_seconds), path=ctx.base or "/",
                        httponly=True, samesite="lax", secure=ctx.secure_cookies())  # fmt: skip
    log.info("sso.signed_in", user_id=user.id, teams=sorted(person.memberships))
    return response


def _redirect_uri(ctx: Ctx, settings: SsoSettings) -> str:
    return settings.redirect_uri or public_url(ctx, "/sso/callback")


def _refused(ctx: Ctx, status: int, message: str) -> Response:
    log.info("sso.refused", status=status, reason=message)
    response = ctx.render("login.html", status=status, error=message, name="", signin_csrf="", next="", sso=sso_of(ctx), password_form=False)
    response.delete_cookie(FLOW_COOKIE, path=ctx.url("/sso"))
    return response


def _failed(ctx: Ctx, exc: SignOnFailed) -> Response:
    log.warning("sso.failed", reason=str(exc))
    return _refused(ctx, 502 if exc.unreachable else 401, _("Signing in through the identity provider failed: %(reason)s.", reason=str(exc)))
