"""The console's Starlette app, mounted on the gateway under ``/console``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .plugin_settings import SESSION_HOURS, signin_rule
from .sessions import MOUNT_PATH
from .sso import views as sso_views
from .sso.state import sso_state
from .views import admin_audit, admin_channels, admin_codes, admin_keys, admin_signups, admin_site, admin_users, auth, channel_models, dashboard, keys, logs, models, playground, quickstart, team_members, teams, tokens, wallet
from . import i18n
from .web import TEMPLATES, ConsoleState, language_of, page_values, remember_language

STATIC = Path(__file__).parent / "static"
GET, POST, BOTH = ["GET"], ["POST"], ["GET", "POST"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


class SecurityHeaders:
    """Pure ASGI middleware: a strict content security policy on every answer,
    and no caching of pages (they carry private data and CSRF tokens).
    ``form_targets``: other origins a form may lead to (the identity provider's)."""

    def __init__(self, app: Any, form_targets: tuple[str, ...] = ()) -> None:
        self.app = app
        self.csp = CSP.replace("form-action 'self'", " ".join(("form-action 'self'", *form_targets))).encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        static = "/static/" in scope["path"]

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                names = {name.lower() for name, _ in headers}
                extra = [
                    (b"content-security-policy", self.csp),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"x-frame-options", b"DENY"),
                ]
                if b"cache-control" not in names:
                    extra.append((b"cache-control", b"public, max-age=3600" if static else b"no-store"))
                message["headers"] = headers + extra
            await send(message)

        await self.app(scope, receive, send_with_headers)


def routes() -> list:
    return [
        Route("/", auth.home, methods=GET),
        Route("/login", auth.sign_in_page, methods=GET),
        Route("/login", auth.sign_in, methods=POST),
        Route("/logout", auth.sign_out, methods=POST),
        Route("/sso/login", sso_views.start, methods=GET),
        Route("/sso/callback", sso_views.callback, methods=GET),
        Route("/account", auth.account, methods=BOTH),
        Route("/dashboard", dashboard.dashboard, methods=GET),
        Route("/playground", playground.playground, methods=GET),
        Route("/keys", keys.key_list, methods=GET),
        Route("/keys/new", keys.key_new, methods=BOTH),
        Route("/keys/{key_id:int}/created", keys.key_created, methods=GET),
        Route("/keys/{key_id:int}/edit", keys.key_edit, methods=BOTH),
        Route("/keys/{key_id:int}/enable", keys.key_enable, methods=POST),
        Route("/keys/{key_id:int}/disable", keys.key_disable, methods=POST),
        Route("/keys/{key_id:int}/delete", keys.key_delete, methods=POST),
        Route("/logs", logs.log_list, methods=GET),
        Route("/logs/export.csv", logs.log_export, methods=GET),
        Route("/logs/export.jsonl", logs.log_export_jsonl, methods=GET),
        Route("/logs/{log_id:int}", logs.log_detail, methods=GET),
        Route("/wallet", wallet.wallet, methods=GET),
        Route("/wallet/redeem", wallet.redeem, methods=POST),
        Route("/models", models.model_list, methods=GET),
        Route("/tokens", tokens.token_list, methods=GET),
        Route("/tokens/new", tokens.token_new, methods=POST),
        Route("/tokens/{token_id:int}/created", tokens.token_created, methods=GET),
        Route("/tokens/{token_id:int}/revoke", tokens.token_revoke, methods=POST),
        Route("/teams", teams.team_list, methods=GET),
        Route("/teams", teams.team_create, methods=POST),
        Route("/teams/{team_id:int}", teams.team_detail, methods=GET),
        Route("/teams/{team_id:int}/edit", teams.team_edit, methods=POST),
        Route("/teams/{team_id:int}/budgets", teams.team_budgets, methods=POST),
        Route("/teams/{team_id:int}/limits", teams.team_limits, methods=POST),
        Route("/teams/{team_id:int}/topup", teams.team_topup, methods=POST),
        Route("/teams/{team_id:int}/delete", teams.team_delete, methods=POST),
        Route("/teams/{team_id:int}/members", team_members.member_add, methods=POST),
        Route("/teams/{team_id:int}/members/{user_id:int}/role", team_members.member_role, methods=POST),
        Route("/teams/{team_id:int}/members/{user_id:int}/remove", team_members.member_remove, methods=POST),
        Route("/teams/{team_id:int}/keys", team_members.key_new, methods=POST),
        Route("/teams/{team_id:int}/keys/{key_id:int}/created", team_members.key_created, methods=GET),
        Route("/teams/{team_id:int}/keys/{key_id:int}/budgets", team_members.key_budgets, methods=POST),
        Route("/teams/{team_id:int}/keys/{key_id:int}/edit", team_members.key_edit, methods=POST),
        Route("/teams/{team_id:int}/keys/{key_id:int}/delete", team_members.key_delete, methods=POST),
        Route("/admin/audit", admin_audit.audit_list, methods=GET),
        Route("/quickstart", quickstart.quickstart, methods=GET),
        Route("/admin/channels", admin_channels.channel_list, methods=GET),
        Route("/admin/channels/new", admin_channels.channel_new, methods=BOTH),
        Route("/admin/channels/bulk", admin_channels.channel_bulk, methods=POST),
        Route("/admin/channels/{channel_id:int}/edit", admin_channels.channel_edit, methods=BOTH),
        Route("/admin/channels/{channel_id:int}/enable", admin_channels.channel_enable, methods=POST),
        Route("/admin/channels/{channel_id:int}/disable", admin_channels.channel_disable, methods=POST),
        Route("/admin/channels/{channel_id:int}/delete", admin_channels.channel_delete, methods=POST),
        Route("/admin/channels/{channel_id:int}/test", admin_channels.channel_probe, methods=POST),
        Route("/admin/channels/upstream-models", channel_models.models_for_new, methods=POST),
        Route("/admin/channels/{channel_id:int}/upstream-models", channel_models.models_for_channel, methods=POST),
        Route("/admin/users", admin_users.user_list, methods=GET),
        Route("/admin/users", admin_users.user_create, methods=POST),
        Route("/admin/users/{user_id:int}", admin_users.user_detail, methods=GET),
        Route("/admin/signups/{signup_id:int}/approve", admin_signups.signup_approve, methods=POST),
        Route("/admin/signups/{signup_id:int}/reject", admin_signups.signup_reject, methods=POST),
        Route("/admin/users/{user_id:int}/topup", admin_users.user_topup, methods=POST),
        Route("/admin/users/{user_id:int}/groups", admin_users.user_groups, methods=POST),
        Route("/admin/users/{user_id:int}/budgets", admin_users.user_budgets, methods=POST),
        Route("/admin/users/{user_id:int}/keys/{key_id:int}/budgets", admin_users.key_budgets, methods=POST),
        Route("/admin/users/{user_id:int}/keys/{key_id:int}/edit", admin_keys.key_edit, methods=BOTH),
        Route("/admin/users/{user_id:int}/keys/{key_id:int}/enable", admin_keys.key_enable, methods=POST),
        Route("/admin/users/{user_id:int}/keys/{key_id:int}/disable", admin_keys.key_disable, methods=POST),
        Route("/admin/users/{user_id:int}/keys/{key_id:int}/delete", admin_keys.key_delete, methods=POST),
        Route("/admin/users/{user_id:int}/enable", admin_users.user_enable, methods=POST),
        Route("/admin/users/{user_id:int}/disable", admin_users.user_disable, methods=POST),
        Route("/admin/users/{user_id:int}/delete", admin_users.user_delete, methods=POST),
        Route("/admin/users/{user_id:int}/password", admin_users.user_password, methods=POST),
        Route("/admin/codes", admin_codes.code_list, methods=GET),
        Route("/admin/codes", admin_codes.code_create, methods=POST),
        Route("/admin/codes/export.csv", admin_codes.code_export, methods=GET),
        Route("/admin/codes/{code_id:int}/disable", admin_codes.code_disable, methods=POST),
        Route("/admin/groups", admin_site.group_list, methods=GET),
        Route("/admin/groups", admin_site.group_save, methods=POST),
        Route("/admin/prices", admin_site.price_list, methods=GET),
        Route("/admin/prices", admin_site.price_save, methods=POST),
        Route("/admin/prices/delete", admin_site.price_delete, methods=POST),
        Route("/admin/usage", admin_site.usage_report, methods=GET),
        Route("/admin/logs", logs.admin_log_list, methods=GET),
        Route("/admin/logs/export.csv", logs.admin_log_export, methods=GET),
        Route("/admin/logs/export.jsonl", logs.admin_log_export_jsonl, methods=GET),
        Route("/admin/logs/{log_id:int}", logs.admin_log_detail, methods=GET),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]


async def http_error(request: Request, exc: HTTPException) -> Response:
    """Unknown console paths and wrong methods, as a page (no session needed) —
    or, to an API client (one sending an API key, or not asking for HTML), as a
    JSON error in the shape every client protocol's SDK reads."""
    i18n.use(language_of(request))
    message = {404: i18n._("No such page."), 405: i18n._("That method is not allowed here.")}.get(exc.status_code, str(exc.detail))
    if _api_client(request):
        text = f"Unknown path: {request.method} {request.url.path} (the console serves pages here; the API is under /v1)."
        error = {"type": "not_found_error" if exc.status_code == 404 else "invalid_request_error", "message": text,
                 "code": exc.status_code, "status": "NOT_FOUND" if exc.status_code == 404 else "INVALID_ARGUMENT"}  # fmt: skip
        return JSONResponse({"type": "error", "error": error}, status_code=exc.status_code, headers=getattr(exc, "headers", None))
    html = TEMPLATES.get_template("error.html").render(
        base=request.scope.get("root_path", "").rstrip("/"), viewer=None, notice=None, path=request.url.path,
        status_code=exc.status_code, message=message, **page_values(request),
    )  # fmt: skip
    return remember_language(request, HTMLResponse(html, status_code=exc.status_code, headers=getattr(exc, "headers", None)))


_API_KEY_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")


def _api_client(request: Request) -> bool:
    headers = request.headers
    if any(name in headers for name in _API_KEY_HEADERS):
        return True
    accept = headers.get("accept", "")
    return "text/html" not in accept and "*/*" not in accept or "application/json" in accept.split(",")[0]


def console_app(settings: dict[str, Any] | None = None) -> Starlette:
    """The console as an ASGI app. ``settings`` is ``[plugins.console]`` of
    ``plugins.toml``: the sign-in throttle (:func:`.plugin_settings.signin_rule`),
    ``session_hours`` (12), ``secure_cookies`` (false: cookies are ``Secure``
    only on HTTPS requests; set it behind a TLS-terminating proxy), and the table
    ``sso`` of single sign-on (:mod:`.sso.settings`, under ``RELAYGATE_SSO_*``)."""
    settings = dict(settings or {})
    rule = signin_rule(settings)
    sso = sso_state(settings, os.environ)
    security = Middleware(SecurityHeaders, form_targets=sso.form_targets())
    app = Starlette(routes=routes(), middleware=[security], exception_handlers={HTTPException: http_error})
    app.state.console = ConsoleState(settings, rule, float(settings.get("session_hours", SESSION_HOURS)) * 3600)
    app.state.sso = sso
    return app


def favicon_route() -> Route:
    """``/favicon.ico`` at the gateway's root, which browsers ask for by themselves:
    the console's icon (an SVG; its pages link it as ``rel=icon``)."""
    icon = (STATIC / "favicon.svg").read_bytes()

    async def favicon(request: Request) -> Response:
        return Response(icon, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})

    return Route("/favicon.ico", favicon, methods=GET)


def console_mount(settings: dict[str, Any] | None = None) -> Mount:
    return Mount(MOUNT_PATH, app=console_app(settings), name="console")
