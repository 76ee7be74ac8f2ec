"""The console's settings, ``[plugins.console]`` of ``plugins.toml``: the sign-in
throttle's rule read from them, and every key declared with its default (and, for
single sign-on's ``[plugins.console.sso]``, its ``RELAYGATE_SSO_*`` variable) for
``relaygate config show``. Light to import: ``config show`` loads this, not the app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway_core.ratelimit import SignInRule

SIGNIN_SETTINGS = {  # [plugins.console] setting: the SignInRule field it sets
    "signin_free_failures": "free_failures",
    "signin_free_failures_per_address": "address_free_failures",
    "signin_free_failures_per_account": "account_free_failures",
    "signin_delay_seconds": "base_delay",
    "signin_max_delay_seconds": "max_delay",
    "signin_window_seconds": "window",
}
SESSION_HOURS = 12  # how long a console session lasts, unless session_hours says


def signin_rule(settings: dict[str, Any]) -> SignInRule:
    """The sign-in throttle's rule from ``signin_*`` settings (see the README)."""
    values: dict[str, Any] = {}
    for setting, field in SIGNIN_SETTINGS.items():
        if setting in settings:
            kind = float if field in ("base_delay", "max_delay", "window") else int
            values[field] = kind(settings[setting])
    return SignInRule(**values)


# [plugins.console.sso]'s keys and defaults: .sso.settings reads these keys (this module does not
# import it: it loads the admin layer; tests/test_plugin_settings.py checks the defaults agree)
SSO_PREFIX = "RELAYGATE_SSO_"
SSO_DEFAULTS: dict[str, Any] = {
    "issuer": None, "client_id": None, "client_secret": None, "scopes": ["openid", "email", "profile"], "groups_claim": "groups",
    "name_claim": "email", "team_roles": {}, "allowed_domains": [], "password_signin": True, "break_glass": [], "self_signup": False,
    "signup_approval": False, "signup_team": "", "signup_role": "member", "signup_group": "default", "redirect_uri": "", "post_logout_redirect_uri": "", "button_label": "",
}  # fmt: skip
SSO_SECRETS = frozenset({"client_secret"})


def declare(register: Callable[..., None]) -> None:
    """Every key of ``[plugins.console]`` and ``[plugins.console.sso]`` with its default,
    through the ``register_settings`` hook's ``register`` (the client secret a secret)."""
    register("console", "secure_cookies", default=False)
    register("console", "session_hours", default=SESSION_HOURS)
    rule = SignInRule()
    for setting, field in SIGNIN_SETTINGS.items():
        register("console", setting, default=getattr(rule, field))
    for key, default in SSO_DEFAULTS.items():
        register("console.sso", key, default=default, variable=SSO_PREFIX + key.upper(), secret=key in SSO_SECRETS)
