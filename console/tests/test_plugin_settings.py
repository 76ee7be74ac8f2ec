"""The console's settings in ``relaygate config show``: every key of [plugins.console]
and [plugins.console.sso] with its source, the client secret masked, and the defaults
declared for it the ones the console uses."""

from __future__ import annotations

import contextlib
import io
import json

from gateway_core.admin.sso_users import SignUp
from gateway_core.commands.cli import main
from gateway_core.ratelimit import SignInRule

from gateway_console.plugin_settings import SIGNIN_SETTINGS, SSO_DEFAULTS, SSO_PREFIX, declare, signin_rule
from gateway_console.sso.settings import KEYS, PREFIX, sso_settings


def declared() -> dict[tuple[str, str], dict]:
    found: dict[tuple[str, str], dict] = {}
    declare(lambda table, key, **rest: found.setdefault((table, key), rest))
    return found


def test_the_declared_defaults_are_the_ones_the_console_uses():
    found = declared()
    assert {key for table, key in found if table == "console.sso"} == set(KEYS) and SSO_PREFIX == PREFIX
    sso = sso_settings({"issuer": "https://id.example", "client_id": "gw", "client_secret": "s"}, {})
    assert sso is not None
    defaults = {key: found["console.sso", key]["default"] for key in KEYS}
    assert sso.scopes == tuple(defaults["scopes"]) and sso.allowed_domains == tuple(defaults["allowed_domains"])
    assert sso.break_glass == tuple(defaults["break_glass"]) and dict(sso.team_roles) == defaults["team_roles"]
    for key in ("groups_claim", "name_claim", "password_signin", "redirect_uri", "post_logout_redirect_uri", "button_label"):
        assert getattr(sso, key) == defaults[key], key
    assert sso.signup == SignUp(enabled=defaults["self_signup"], approval=defaults["signup_approval"], team=defaults["signup_team"], role=defaults["signup_role"], group=defaults["signup_group"])
    assert all(found["console.sso", key]["variable"] == PREFIX + key.upper() for key in KEYS)
    assert [key for (table, key), rest in found.items() if rest.get("secret")] == ["client_secret"]
    rule = SignInRule()
    assert signin_rule({}) == rule
    assert {key: found["console", key]["default"] for key in SIGNIN_SETTINGS} == {key: getattr(rule, field) for key, field in SIGNIN_SETTINGS.items()}
    assert found["console", "session_hours"]["default"] == 12 and found["console", "secure_cookies"]["default"] is False


def test_config_show_prints_the_consoles_settings_with_the_client_secret_masked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text(
        'load = ["console"]\n[plugins.console]\nsession_hours = 8\n'
        '[plugins.console.sso]\nissuer = "https://id.example"\nclient_id = "gw"\nclient_secret = "file-secret-5"\n'
    )
    monkeypatch.setenv("RELAYGATE_SSO_CLIENT_ID", "env-client")
    monkeypatch.setenv("RELAYGATE_SSO_CLIENT_SECRET", "env-secret-6")
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["config", "show", "--json", "--db", str(tmp_path / "gw.db")]) == 0
    shown = json.loads(out.getvalue())
    assert shown["plugins.console.session_hours"] == {"value": 8, "from": "plugins.toml"}
    assert shown["plugins.console.secure_cookies"] == {"value": False, "from": "default"}
    assert shown["plugins.console.signin_window_seconds"] == {"value": SignInRule().window, "from": "default"}
    assert shown["plugins.console.sso.issuer"] == {"value": "https://id.example", "from": "plugins.toml"}
    assert shown["plugins.console.sso.client_id"] == {"value": "env-client", "from": "RELAYGATE_SSO_CLIENT_ID"}
    assert shown["plugins.console.sso.client_secret"] == {"value": "********", "from": "RELAYGATE_SSO_CLIENT_SECRET"}
    assert shown["plugins.console.sso.scopes"] == {"value": ["openid", "email", "profile"], "from": "default"}
    assert "env-secret-6" not in out.getvalue() and "file-secret-5" not in out.getvalue()
