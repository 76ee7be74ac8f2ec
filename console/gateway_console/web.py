"""What every console page shares: the gateway's services, the signed-in user,
the CSRF check, templates and responses.

Each view is ``async def view(ctx: Ctx) -> Response`` wrapped by :func:`page`,
which resolves the session, refuses a POST without the session's CSRF token
(403), sends a visitor without a session to the sign-in page and refuses
non-admins on admin pages (403): no view can forget one of these. An admin
operation's ``NotFound`` becomes a 404 page, its ``Forbidden`` (a team role that does
not allow the operation) a 403 page.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import attrs
import jinja2
from gateway_core import services_from_scope
from gateway_core.admin import Admin, Forbidden, NotFound, audit
from gateway_core.sql import SqlHandle
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from . import i18n, queries
from .forms import FILTERS, FormError, FormTooLarge, read_form
from gateway_core.ratelimit import SignInRule
from .sessions import CSRF_FIELD, REVEAL_COOKIE, SESSION_COOKIE, Signer, session_id

REVEAL_SECONDS = 300  # how long a new secret waits for the page that shows it

TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
    extensions=["jinja2.ext.i18n"],
)
TEMPLATES.filters.update(FILTERS)
TEMPLATES.policies["ext.i18n.trimmed"] = True  # a message's line breaks and indentation are not part of it
TEMPLATES.globals.update(
    period_name=i18n.period_name, team_role=i18n.team_role, cost_part=i18n.cost_part, by_title=i18n.by_title, by_column=i18n.by_column,
    ledger_kind=i18n.ledger_kind, health_state=i18n.health_state, setting_label=i18n.setting_label, setting_help=i18n.setting_help, setting_accepts=i18n.setting_accepts,
)
TEMPLATES.install_gettext_callables(i18n.gettext_, i18n.ngettext_, newstyle=True)  # type: ignore[attr-defined]

NOTICES = {  # the messages are translated when shown
    "created": i18n.N_("Created."),
    "saved": i18n.N_("Saved."),
    "enabled": i18n.N_("Enabled."),
    "disabled": i18n.N_("Disabled."),
    "deleted": i18n.N_("Deleted."),
    "topped-up": i18n.N_("Balance topped up."),
    "signed-out": i18n.N_("You are signed out."),
    "password": i18n.N_("Password changed."),
    "redeemed": i18n.N_("Code redeemed: your balance is credited."),
    "locked": i18n.N_("This key was disabled by the gateway's operator: only they can enable it."),
    "revoked": i18n.N_("Revoked."),
}


def language_of(request: Request) -> i18n.Language:
    """The language of a console request (``?lang=``, the cookie, Accept-Language, English)."""
    return i18n.choose(request.query_params.get(i18n.LANG_PARAM), request.cookies.get(i18n.LANG_COOKIE), request.headers.get("accept-language"))


def page_values(request: Request) -> dict[str, Any]:
    """What base.html needs besides a view's values: the language and the switch's links."""
    params = [(name, value) for name, value in request.query_params.multi_items() if name not in (i18n.LANG_PARAM, "done")]
    switch = [(language, request.url.path + "?" + urlencode([*params, (i18n.LANG_PARAM, language.code)])) for language in i18n.LANGUAGES]
    return {"lang": i18n.current(), "languages": switch, "script_messages": i18n.script_messages()}


def remember_language(request: Request, response: Response) -> Response:
    """A ``?lang=`` choice is kept in a cookie (a year) for the next pages."""
    chosen = i18n.find(request.query_params.get(i18n.LANG_PARAM))
    if chosen is not None and request.cookies.get(i18n.LANG_COOKIE) != chosen.code:
        response.set_cookie(i18n.LANG_COOKIE, chosen.code, max_age=365 * 86400, path="/", samesite="lax",
                            secure=request.url.scheme == "https")  # fmt: skip
    return response


@attrs.define
class ConsoleState:
    """One console app's long-lived state (one per gateway app)."""

    settings: dict[str, Any]
    signin_rule: SignInRule
    session_seconds: float
    services: Any = None
    admin: Admin | None = None
    signer: Signer | None = None
    _lock: asyncio.Lock = attrs.field(factory=asyncio.Lock)

    async def resolve(self, scope: dict) -> tuple[Any, Admin, Signer]:
        if self.services is None:
            self.services = services_from_scope(scope)
            self.admin = Admin.of(self.services)
        assert self.admin is not None
        if self.signer is None:
            async with self._lock:
                if self.signer is None:
                    secret = await queries.session_secret(self.services.sql)
                    if not secret:
                        raise RuntimeError("the console's session secret is missing (migration 8000_console)")
                    self.signer = Signer(secret)
        return self.services, self.admin, self.signer


@attrs.frozen
class Viewer:
    id: int
    name: str
    is_admin: bool
    token: str = attrs.field(repr=False)
    csrf: str = attrs.field(repr=False)

    @property
    def user_id(self) -> int:
        """The viewer as the caller of a team operation (:mod:`gateway_core.admin.team_access`)."""
        return self.id


class Ctx:
    """One request to a console page."""

    def __init__(self, request: Request, state: ConsoleState, services: Any, admin: Admin, signer: Signer) -> None:
        self.request = request
        self.state = state
        self.services = services
        self.admin = admin  # every operation on users, keys, channels, ... (gateway_core.admin)
        self.signer = signer
        self.viewer: Viewer | None = None
        self.form = FormData()
        self.base = request.scope.get("root_path", "").rstrip("/")

    @property
    def user(self) -> Viewer:
        assert self.viewer is not None
        return self.viewer

    def url(self, path: str) -> str:
        return self.base + path

    def path_int(self, name: str) -> int:
        return int(self.request.path_params[name])

    @property
    def sql(self) -> SqlHandle:
        """The console's own tables (:mod:`.queries`)."""
        return self.services.sql  # type: ignore[no-any-return]

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        notice = NOTICES.get(self.request.query_params.get("done", ""))
        html = TEMPLATES.get_template(template).render(
            base=self.base, viewer=self.viewer, csrf=self.viewer.csrf if self.viewer else "",
            csrf_field=CSRF_FIELD, notice=i18n._(notice) if notice else None, path=self.request.url.path, now=time.time(),
            **page_values(self.request), **values,
        )  # fmt: skip
        return HTMLResponse(html, status_code=status)

    def redirect(self, path: str, done: str | None = None) -> RedirectResponse:
        target = self.url(path)
        if done:
            target += ("&" if "?" in target else "?") + "done=" + quote(done)
        return RedirectResponse(target, status_code=303)

    def error(self, status: int, message: str) -> HTMLResponse:
        return self.render("error.html", status=status, status_code=status, message=message)

    def not_found(self, what: str = "page") -> HTMLResponse:
        return self.error(404, i18n._("No such page.") if what == "page" else i18n._("No such %(what)s.", what=what))

    def reveal_once(self, path: str, secret: str) -> RedirectResponse:
        """Post/redirect/get for a new secret: a redirect to ``path`` (the page that
        shows it), the secret riding along in a cookie sealed for this session and
        that page alone. Reloading that page finds no cookie and creates nothing."""
        response = self.redirect(path)
        response.set_cookie(
            REVEAL_COOKIE, self.signer.seal(f"{path}\n{secret}", self.user.token), max_age=REVEAL_SECONDS,
            path=self.url(path), httponly=True, samesite="strict", secure=self.secure_cookies(),
        )  # fmt: skip
        return response

    def revealed(self, path: str) -> str | None:
        """The secret :meth:`reveal_once` sent to ``path``, once: ``None`` when it was shown already."""
        opened = self.signer.unseal(self.request.cookies.get(REVEAL_COOKIE), self.user.token, REVEAL_SECONDS)
        target, _, secret = (opened or "").partition("\n")
        return secret if opened and target == path and secret else None

    def shown_once(self, response: Response, path: str) -> Response:
        """``response`` (the page showing a new secret) with the secret's cookie gone and no caching."""
        response.delete_cookie(REVEAL_COOKIE, path=self.url(path))
        response.headers["Cache-Control"] = "no-store"
        return response

    def secure_cookies(self) -> bool:
        return bool(self.state.settings.get("secure_cookies")) or self.request.url.scheme == "https"

    async def audit(self, action: str, target: str, before: Any = None, after: Any = None) -> None:
        """Record a write made in this session in the audit log (records or their JSON)."""
        who = audit.actor("session", self.user.id, self.user.name, request_id=self.request.scope.get("relaygate.request_id"))
        await audit.record(self.admin, who, action, target, before, after)


async def load_viewer(ctx: Ctx) -> Viewer | None:
    token = ctx.signer.token_from_cookie(ctx.request.cookies.get(SESSION_COOKIE))
    if token is None:
        return None
    row = await queries.find_session(ctx.sql, session_id(token))
    if row is None:
        return None
    return Viewer(row["id"], row["name"], bool(row["is_admin"]), token, ctx.signer.csrf_token(token))


def page(*, admin: bool = False, public: bool = False) -> Callable:
    """Wrap a view with session, CSRF and role checks (see the module's docstring)."""

    def wrap(view: Callable[[Ctx], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(view)
        async def endpoint(request: Request) -> Response:
            state: ConsoleState = request.app.state.console
            services, operations, signer = await state.resolve(request.scope)
            i18n.use(language_of(request))
            return remember_language(request, await respond(request, state, services, operations, signer))

        async def respond(request: Request, state: ConsoleState, services: Any, operations: Admin, signer: Signer) -> Response:
            ctx = Ctx(request, state, services, operations, signer)
            ctx.viewer = await load_viewer(ctx)
            if not public and ctx.viewer is None:
                if request.method != "GET":
                    return ctx.error(403, i18n._("Your session has ended: sign in again."))
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(ctx.url("/login?next=" + quote(target, safe="")), status_code=303)
            if admin and not ctx.user.is_admin:
                return ctx.error(403, i18n._("This page is for operators (admins) only."))
            if request.method == "POST":
                try:
                    ctx.form = await read_form(request)
                except FormTooLarge:
                    return ctx.error(413, i18n._("The form is too large."))
                except FormError as exc:
                    return ctx.error(400, str(exc))
                if not public and not signer.check_csrf(ctx.user.token, ctx.form.get(CSRF_FIELD)):
                    return ctx.error(403, i18n._("The form's security token is missing or wrong: reload the page and try again."))
            try:
                return await view(ctx)
            except NotFound as exc:  # a record that is not there, or not the viewer's
                return ctx.error(404, f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
            except Forbidden as exc:  # a team the viewer is in, an operation their role does not allow
                return ctx.error(403, str(exc))

        return endpoint

    return wrap


def safe_next(base: str, target: str | None) -> str:
    """Where to go after signing in: only a path of this console (no open redirect)."""
    if target and target.startswith(base + "/") and not target.startswith("//") and "\\" not in target:
        return target
    return base + "/dashboard"


def now() -> float:
    return time.time()
