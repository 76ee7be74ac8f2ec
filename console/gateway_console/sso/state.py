"""Single sign-on's state in one console app, and what the password sign-in and
signing out ask of it (:mod:`.views` holds the sign-in through the provider)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
import structlog
from starlette.responses import Response

from ..web import Ctx
from .oidc import OpenIdProvider, SignOnFailed
from .settings import SsoSettings, sso_settings

ID_TOKEN_COOKIE = "rg_sso"  # the ID token of a session begun at the provider, sealed: the hint for its logout
log = structlog.get_logger("relaygate.console.sso")


@attrs.define
class SsoState:
    """Single sign-on of one console app: its settings (``None``: off) and the provider's client."""

    settings: SsoSettings | None
    provider: OpenIdProvider | None = None

    def form_targets(self) -> tuple[str, ...]:
        """Origins a console form may lead to besides its own: the provider's, where
        signing out goes on to (the pages' ``form-action`` policy)."""
        if self.settings is None:
            return ()
        url = urlsplit(self.settings.issuer)
        return (f"{url.scheme}://{url.netloc}",)

    def provider_for(self, ctx: Ctx) -> OpenIdProvider:
        assert self.settings is not None
        if self.provider is None:
            self.provider = OpenIdProvider(self.settings, ctx.services.session)
        return self.provider


def sso_of(ctx: Ctx) -> SsoSettings | None:
    """The console's single sign-on settings, ``None`` when it is off."""
    return state_of(ctx).settings


def password_allowed(ctx: Ctx, name: str) -> bool:
    """Whether ``name`` may sign in with a password (always, unless single sign-on turned it off)."""
    settings = sso_of(ctx)
    return settings is None or settings.password_allowed(name)


async def after_sign_out(ctx: Ctx, response: Response) -> Response:
    """``response`` (signing out), sent on to the provider's end-session endpoint when
    the session began there (RP-initiated logout)."""
    settings = sso_of(ctx)
    marker = ctx.request.cookies.get(ID_TOKEN_COOKIE)
    if settings is None or not marker:
        return response
    hint = ctx.signer.unseal(marker, ID_TOKEN_COOKIE, int(ctx.state.session_seconds))
    back = settings.post_logout_redirect_uri or public_url(ctx, "/login")
    try:
        target = await state_of(ctx).provider_for(ctx).logout_url(hint, back)
    except SignOnFailed as exc:
        log.warning("sso.logout_unavailable", reason=str(exc))
        target = None
    if target is not None and response.status_code == 303:
        response.headers["location"] = target
    response.delete_cookie(ID_TOKEN_COOKIE, path=ctx.base or "/")
    return response


def sso_state(settings: Mapping[str, Any], environ: Mapping[str, str]) -> SsoState:
    """The state of ``[plugins.console]``'s table ``sso`` under ``RELAYGATE_SSO_*``."""
    return SsoState(sso_settings(settings.get("sso"), environ))


def state_of(ctx: Ctx) -> SsoState:
    state: SsoState = ctx.request.app.state.sso
    return state


def public_url(ctx: Ctx, path: str) -> str:
    """The console's ``path`` as the browser reaches it."""
    url = ctx.request.url
    return f"{url.scheme}://{url.netloc}{ctx.url(path)}"
