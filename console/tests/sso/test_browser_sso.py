"""Single sign-on in Chromium through a real OpenID provider (``oidc-provider`` on
loopback, ``conftest.py``): people land in the teams and roles their groups
map to, a changed claim changes the role at the next sign-in (signed with a key
the provider rotated in meanwhile), the domain
allow-list, closed and open sign-up, sign-up waiting for an administrator's approval,
password sign-in turned off but for a
break-glass admin, and signing out at the provider."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gateway_console.sso.oidc import KEYS_REFRESH_SECONDS
from gateway_core.admin import Admin, signups, teams
from gateway_core.config import Config

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "console"  # as the chromium fixture makes it
TEAM_ROLES = {"eng-leads": "eng:admin", "eng": "eng:member", "finance": ["ops:viewer"]}


@pytest.fixture
def sso(oidc, seed, users, start_gateway, relaygate_config):
    """``sso(**settings)``: teams eng and ops, a gateway whose console signs in
    through a real provider (extra ``[plugins.console.sso]`` settings), and the provider."""
    async def make_teams(port):
        admin = Admin(port)
        for name in ("eng", "ops", "newcomers"):
            await teams.create_team(admin, name)

    seed._admin(make_teams)

    def start(**settings):
        provider = oidc()
        provider.set_accounts({
            "ana": {"email": "ana@example.com", "groups": ["eng-leads", "staff"]},
            "ben": {"email": "ben@example.com", "groups": ["eng"]},
            "eve": {"email": "eve@elsewhere.test", "groups": ["eng"]},
            "zoe": {"email": "zoe@example.com", "groups": ["unmapped"]},
        })  # fmt: skip
        table = provider.settings(team_roles=TEAM_ROLES, **settings)
        gateway = start_gateway(Config(db_path=relaygate_config.db_path, plugins={"console": {"sso": table}}))
        provider.start(gateway.url + "/console/sso/callback", gateway.url + "/console/login")
        return gateway, provider

    return start


def sso_sign_in(page, gateway, provider, login: str, start: str | None = None) -> None:
    """Through the console's button and the provider's own sign-in and consent pages
    (``start``: a console page opened first, which sends the signed-out person to sign in)."""
    page.goto(start or gateway.url + "/console/login")
    page.click("#sso-sign-in")
    page.wait_for_url(provider.issuer + "/interaction/**")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any-password")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    if page.url.startswith(provider.issuer + "/interaction/"):  # the consent page, the first time
        page.click("button[type=submit]")
    page.wait_for_url(f"{gateway.url}/console/**")


def my_teams(page, gateway) -> dict[str, str]:
    """The signed-in user's teams and roles, as the management API tells them (the session's cookie)."""
    answer = page.request.get(gateway.url + "/api/v1/teams")
    assert answer.ok, answer.text()
    return {team["name"]: team["role"] for team in answer.json()}


def sign_out(page) -> None:
    page.click("form[action$='/logout'] button")


def test_a_person_lands_in_their_teams_and_a_changed_claim_changes_the_role(chromium, sso):
    gateway, provider = sso()
    context, errors = chromium
    page = context.new_page()
    sso_sign_in(page, gateway, provider, "ana")
    first_sign_in = time.monotonic()  # the gateway read the provider's keys then
    assert page.url.endswith("/console/dashboard")
    assert "ana@example.com" in page.content()
    assert my_teams(page, gateway) == {"eng": "admin"}

    accounts = json.loads(provider.accounts_file.read_text())
    accounts["ana"]["groups"] = ["eng", "finance"]  # no longer a lead; now in finance too
    provider.set_accounts(accounts)
    sign_out(page)
    page.wait_for_url(provider.issuer + "/session/end**")  # the provider's end-session endpoint asks to confirm
    page.click("button[name=logout]")
    page.wait_for_url(gateway.url + "/console/login**")
    assert page.request.get(gateway.url + "/api/v1/teams").status == 401  # signed out of the console too

    provider.rotate(gateway.url + "/console/sso/callback", gateway.url + "/console/login")  # a new signing key, the old one gone
    time.sleep(max(0.0, KEYS_REFRESH_SECONDS - (time.monotonic() - first_sign_in)))  # the keys are read again at most this often
    sso_sign_in(page, gateway, provider, "ana")
    assert my_teams(page, gateway) == {"eng": "member", "ops": "viewer"}

    accounts["ana"]["groups"] = []  # out of every mapped group: out of every mapped team
    provider.set_accounts(accounts)
    sign_out(page)
    page.click("button[name=logout]")
    sso_sign_in(page, gateway, provider, "ana")
    assert my_teams(page, gateway) == {}
    assert not errors


def test_other_domains_and_unknown_people_are_refused_and_sign_up_gives_a_default_team(chromium, sso):
    gateway, provider = sso(allowed_domains=["example.com"])
    context, _ = chromium
    page = context.new_page()
    sso_sign_in(page, gateway, provider, "eve")  # mapped to eng, but of another domain
    assert "Accounts of elsewhere.test may not sign in here." in page.content()
    assert page.request.get(gateway.url + "/api/v1/teams").status == 401

    other = context.browser.new_context() if context.browser else None
    page = (other or context).new_page()
    page.context.clear_cookies()
    sso_sign_in(page, gateway, provider, "zoe")  # no mapped group, sign-up closed
    assert "sign-up is closed" in page.content()
    assert page.request.get(gateway.url + "/api/v1/teams").status == 401


def test_self_sign_up_gives_a_new_person_the_default_team(chromium, sso):
    gateway, provider = sso(self_signup=True, signup_team="newcomers", signup_role="viewer")
    context, _ = chromium
    page = context.new_page()
    sso_sign_in(page, gateway, provider, "zoe")
    assert page.url.endswith("/console/dashboard")
    assert my_teams(page, gateway) == {"newcomers": "viewer"}


def test_self_sign_up_waits_for_an_administrators_approval(chromium, sso, seed):
    gateway, provider = sso(self_signup=True, signup_approval=True, signup_team="newcomers", signup_role="viewer", signup_group="trial")
    context, errors = chromium
    page = context.new_page()
    sso_sign_in(page, gateway, provider, "zoe")  # no mapped group: a self sign-up, kept for approval
    assert "waiting for an administrator's approval" in page.inner_text("#signup-pending")
    page.screenshot(path=str(ARTIFACTS / "sso-signup-pending.png"), full_page=True)
    assert page.request.get(gateway.url + "/api/v1/teams").status == 401  # no session, no user

    async def approve(port):
        admin = Admin(port)
        assert await admin.store.find_user("zoe@example.com") is None
        waiting = await signups.find_signup(admin, "zoe@example.com")
        assert waiting.status == "pending"
        return await signups.approve_signup(admin, waiting.id)

    _, user = seed._admin(approve)
    assert user.groups == ("trial",)

    again = context.browser.new_context() if context.browser else context  # signed out of the provider too
    page = again.new_page()
    sso_sign_in(page, gateway, provider, "zoe")
    assert page.url.endswith("/console/dashboard")
    assert my_teams(page, gateway) == {"newcomers": "viewer"}
    assert not errors


def test_password_sign_in_off_but_for_the_break_glass_admin(chromium, sso, passwords):
    gateway, provider = sso(password_signin=False, break_glass=["root"])
    context, _ = chromium
    page = context.new_page()
    page.goto(gateway.url + "/console/login")
    assert not page.is_visible("input[name=password]")  # the password form is folded away
    page.screenshot(path=str(ARTIFACTS / "sso-sign-in.png"), full_page=True)
    page.click("summary")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", passwords["alice"])
    page.click("form[action$='/login'] button[type=submit]")
    assert "Password sign-in is off here" in page.content()
    page.click("summary")
    page.fill("input[name=name]", "root")
    page.fill("input[name=password]", passwords["root"])
    page.click("form[action$='/login'] button[type=submit]")
    page.wait_for_url(gateway.url + "/console/dashboard")
