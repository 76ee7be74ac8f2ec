"""Single sign-on's settings: ``[plugins.console.sso]`` under ``RELAYGATE_SSO_*``,
wrong ones refused at start-up by name, the client secret never in a repr; and
what the sign-ins write, in the audit log."""

from __future__ import annotations

import pytest

from gateway_console.sso.settings import sso_settings
from gateway_core.admin import Admin
from gateway_core.admin.sso_users import Refused, SignOn, SignUp, sign_on
from gateway_core.admin import audit, teams, users
from gateway_core.config import ConfigError

TABLE = {"issuer": "https://id.example.com/", "client_id": "console", "client_secret": "s3cret-value"}


def test_off_without_an_issuer_and_the_file_under_the_environment():
    assert sso_settings(None, {}) is None
    assert sso_settings({"client_id": "x"}, {}) is None
    settings = sso_settings(
        {**TABLE, "team_roles": {"eng-admins": "eng:admin", "staff": ["eng:viewer", "ops:member"]}, "allowed_domains": ["Example.com"]},
        {"RELAYGATE_SSO_CLIENT_SECRET": "from-the-environment", "RELAYGATE_SSO_PASSWORD_SIGNIN": "off",
         "RELAYGATE_SSO_BREAK_GLASS": "root, ops-admin", "RELAYGATE_SSO_SCOPES": "email,groups"},
    )  # fmt: skip
    assert settings is not None
    assert settings.issuer == "https://id.example.com" and settings.client_secret == "from-the-environment"
    assert settings.scopes == ("openid", "email", "groups")
    assert not settings.password_signin and settings.break_glass == ("root", "ops-admin")
    assert settings.password_allowed("root") and not settings.password_allowed("alice")
    assert settings.domain_allowed("ana@example.COM") and not settings.domain_allowed("eve@example.org")
    assert settings.memberships(["eng-admins", "staff", "other"]) == {"eng": "admin", "ops": "member"}
    assert settings.memberships("staff") == {"eng": "viewer", "ops": "member"}
    assert settings.managed_teams == {"eng", "ops"}
    assert "s3cret" not in repr(settings) and "from-the-environment" not in repr(settings)


def test_the_mapping_from_the_environment():
    settings = sso_settings({}, {"RELAYGATE_SSO_ISSUER": "https://id.example.com", "RELAYGATE_SSO_CLIENT_ID": "c",
                                 "RELAYGATE_SSO_CLIENT_SECRET": "s", "RELAYGATE_SSO_TEAM_ROLES": "eng-admins=eng:admin,eng=eng:member",
                                 "RELAYGATE_SSO_SELF_SIGNUP": "true", "RELAYGATE_SSO_SIGNUP_TEAM": "newcomers"})  # fmt: skip
    assert settings is not None
    assert settings.memberships(["eng"]) == {"eng": "member"} and settings.signup == SignUp(True, "newcomers", "member", "default")
    waiting = sso_settings(TABLE, {"RELAYGATE_SSO_SELF_SIGNUP": "on", "RELAYGATE_SSO_SIGNUP_APPROVAL": "yes", "RELAYGATE_SSO_SIGNUP_ROLE": "viewer"})
    assert waiting is not None and waiting.signup == SignUp(True, "", "viewer", "default", approval=True)
    assert sso_settings({**TABLE, "self_signup": True}, {}).signup.approval is False  # off by default


@pytest.mark.parametrize(
    "table, environ, message",
    [
        ({**TABLE, "client_secret": ""}, {}, "client_secret"),
        ({**TABLE, "team_roles": {"eng-admins": "eng:owner"}}, {}, "team:role"),
        ({**TABLE, "isuer": "x"}, {}, "unknown setting 'isuer'"),
        (TABLE, {"RELAYGATE_SSO_SELF_SIGNUP": "maybe"}, "RELAYGATE_SSO_SELF_SIGNUP"),
        ({**TABLE, "name_claim": "sub"}, {}, "name_claim"),
        ({**TABLE, "signup_approval": True}, {}, "signup_approval needs self_signup = true"),
        ({**TABLE, "self_signup": True}, {"RELAYGATE_SSO_SIGNUP_APPROVAL": "perhaps"}, "RELAYGATE_SSO_SIGNUP_APPROVAL"),
    ],
)
def test_wrong_settings_are_refused_by_name(table, environ, message):
    with pytest.raises(ConfigError, match=message):
        sso_settings(table, environ)


def test_every_change_a_sign_in_makes_is_audited_and_hand_given_teams_stay(seed):
    async def run(port):
        admin = Admin(port)
        eng = await teams.create_team(admin, "eng")
        side = await teams.create_team(admin, "side-project")
        with pytest.raises(Refused, match="sign-up is closed"):
            await sign_on(admin, SignOn("nobody@example.com", {}, {"eng"}), SignUp())
        user = await sign_on(admin, SignOn("ana@example.com", {"eng": "admin"}, {"eng"}), SignUp())
        await teams.set_member(admin, side.id, user.id, "member")  # given by hand: not the provider's to take away
        await sign_on(admin, SignOn("ana@example.com", {"eng": "viewer"}, {"eng"}), SignUp())
        await sign_on(admin, SignOn("ana@example.com", {}, {"eng"}), SignUp())
        left = {m.team_name: m.role for m in await port.memberships(user.id)}
        entries = [(e.via, e.action, e.target) for e in reversed(await audit.list_entries(admin))]
        await users.set_user_enabled(admin, user.id, False)
        with pytest.raises(Refused, match="disabled"):
            await sign_on(admin, SignOn("ana@example.com", {"eng": "admin"}, {"eng"}), SignUp())
        with pytest.raises(Refused, match="team's wallet"):
            await sign_on(admin, SignOn("team:eng", {}, set()), SignUp(enabled=True))
        return user.id, eng.id, left, entries

    user_id, eng_id, left, entries = seed._admin(run)
    assert left == {"side-project": "member"}
    assert entries == [
        ("sso", "user.create", f"user {user_id}"),
        ("sso", "team.member.add", f"team {eng_id}"),
        ("sso", "team.member.role", f"team {eng_id}"),
        ("sso", "team.member.remove", f"team {eng_id}"),
    ]
