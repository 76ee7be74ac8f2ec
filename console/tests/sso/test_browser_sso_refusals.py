"""A tampered ID token and a token of another audience, refused in a real sign-in in
Chromium: the person goes through the real provider's sign-in and consent pages
(``oidc-provider`` on loopback, ``conftest.py``) behind a proxy that is the provider's
issuer (``oidc_proxy.py``) and alters what its token endpoint answers the gateway; they
come back to the console's sign-in page saying why, with no session, and nobody was
made or changed. Through the same proxy, unaltered, the sign-in goes through."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway_core.admin import Admin, teams
from gateway_core.config import Config

from .conftest import CLIENT_ID, CLIENT_SECRET, OTHER_CLIENT
from .oidc_proxy import ProviderProxy, id_token_claims, with_claims
from .test_browser_sso import TEAM_ROLES, my_teams, sign_out

SITE_ADMIN = "head@example.com"  # a site admin of the gateway, whom a forged token would make anyone


@pytest.fixture
def proxied(oidc, seed, users, start_gateway, relaygate_config):
    """A gateway whose console signs in through the real provider behind a proxy
    (the issuer the gateway is configured with is the proxy's URL): (gateway, provider, proxy)."""
    async def make_teams(port):
        admin = Admin(port)
        for name in ("eng", "ops"):
            await teams.create_team(admin, name)

    seed._admin(make_teams)
    seed.user(SITE_ADMIN, admin=True)
    proxy = ProviderProxy()
    provider = oidc(issuer=proxy.url)
    provider.other_redirect_uri = proxy.other_redirect_uri
    provider.set_accounts({
        "ana": {"email": "ana@example.com", "groups": ["eng-leads"]},
        "ben": {"email": "ben@example.com", "groups": ["eng"]},
    })  # fmt: skip
    settings = provider.settings(team_roles=TEAM_ROLES)
    gateway = start_gateway(Config(db_path=relaygate_config.db_path, plugins={"console": {"sso": settings}}))
    provider.start(gateway.url + "/console/sso/callback", gateway.url + "/console/login")
    proxy.start(f"http://127.0.0.1:{provider.port}")
    yield gateway, provider, proxy
    proxy.stop()


def at_the_provider(page, provider, login: str) -> None:
    """On the provider's sign-in page: its form, then its consent page when it asks."""
    page.wait_for_url(provider.issuer + "/interaction/**")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any-password")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    if page.url.startswith(provider.issuer + "/interaction/"):
        page.click("button[type=submit]")


def people(seed) -> dict[str, list[dict[str, Any]]]:
    """Who the gateway knows, their teams, their sessions and the audit log."""
    return {
        "users": seed.rows("SELECT * FROM users ORDER BY id"),
        "members": seed.rows("SELECT * FROM team_members ORDER BY team_id, user_id"),
        "sessions": seed.rows("SELECT * FROM console_sessions ORDER BY id"),
        "audit": seed.rows("SELECT * FROM audit_log ORDER BY id"),
    }


def refused_without_a_trace(page, gateway, seed, before, logs, reason: str, *tokens: str) -> None:
    """The console's sign-in page says why, the person has no session, nobody was made or
    changed, and the log has ``sso.failed`` and ``sso.refused`` with the reason and no token."""
    assert page.url.startswith(gateway.url + "/console/sso/callback")
    assert page.inner_text("p.error[role=alert]") == f"Signing in through the identity provider failed: the ID token is refused: {reason}."
    assert page.is_visible("#sso-sign-in")  # the sign-in page, to try again
    assert page.request.get(gateway.url + "/api/v1/teams").status == 401
    page.goto(gateway.url + "/console/dashboard")
    page.wait_for_url(gateway.url + "/console/login**")  # a page that needs sign-in sends them to sign in
    assert people(seed) == before
    failed = [entry for entry in logs if entry["event"] == "sso.failed"]
    refused = [entry for entry in logs if entry["event"] == "sso.refused"]
    assert [entry["log_level"] for entry in failed] == ["warning"] and failed[0]["reason"] == f"the ID token is refused: {reason}"
    assert [entry["status"] for entry in refused] == [401] and reason in refused[0]["reason"]
    written = repr(logs)
    assert CLIENT_SECRET not in written and not any(token in written or token.split(".")[2] in written for token in tokens)


def test_through_the_proxy_unaltered_the_sign_in_goes_through(chromium, proxied, seed):
    gateway, provider, proxy = proxied
    context, errors = chromium
    page = context.new_page()
    page.goto(gateway.url + "/console/login")
    page.click("#sso-sign-in")
    at_the_provider(page, provider, "ana")
    page.wait_for_url(gateway.url + "/console/dashboard")
    assert my_teams(page, gateway) == {"eng": "admin"}
    claims = id_token_claims(proxy.token_answers[0]["id_token"])
    assert claims["iss"] == proxy.url and claims["aud"] == CLIENT_ID and claims["email"] == "ana@example.com"
    assert claims["nonce"] == proxy.authorizations[0]["nonce"]
    sign_out(page)
    page.wait_for_url(proxy.url + "/session/end**")
    page.click("button[name=logout]")
    page.wait_for_url(gateway.url + "/console/login**")
    assert page.request.get(gateway.url + "/api/v1/teams").status == 401
    assert ("GET", "/.well-known/openid-configuration") in proxy.seen
    for endpoint in ("authorization_endpoint", "token_endpoint", "jwks_uri", "end_session_endpoint"):
        assert proxy.passed(endpoint), endpoint  # every step went through the proxy
    actions = [row["action"] for row in seed.rows("SELECT action FROM audit_log WHERE via = 'sso' ORDER BY id")]
    assert actions == ["user.create", "team.member.add"]
    assert not errors


def test_a_tampered_id_token_is_refused(chromium, proxied, seed):
    gateway, provider, proxy = proxied
    context, errors = chromium
    before = people(seed)
    forged: list[str] = []

    def tamper(answer: dict[str, Any]) -> dict[str, Any]:  # ben's token made to say he is the site admin, a lead of eng
        forged.append(with_claims(answer["id_token"], email=SITE_ADMIN, groups=["eng-leads"]))
        return {**answer, "id_token": forged[-1]}

    proxy.edit_token = tamper
    page = context.new_page()
    page.goto(gateway.url + "/console/login")
    page.click("#sso-sign-in")
    with capture_logs() as logs:
        at_the_provider(page, provider, "ben")
        page.wait_for_url(gateway.url + "/console/**")  # back at the console: its callback, refusing
    genuine = proxy.token_answers[0]["id_token"]
    assert id_token_claims(genuine)["email"] == "ben@example.com" and id_token_claims(forged[0])["email"] == SITE_ADMIN
    assert forged[0].split(".")[::2] == genuine.split(".")[::2]  # the provider's header and signature, another payload
    refused_without_a_trace(page, gateway, seed, before, logs, "bad_signature", genuine, forged[0])
    assert not errors


def test_an_id_token_the_provider_issued_to_another_app_is_refused_for_its_audience(chromium, proxied, seed):
    gateway, provider, proxy = proxied
    context, errors = chromium
    before = people(seed)
    page = context.new_page()
    page.goto(gateway.url + "/console/login")
    page.click("#sso-sign-in")
    page.wait_for_url(provider.issuer + "/interaction/**")
    console_request = proxy.authorizations[-1]
    assert console_request["client_id"] == CLIENT_ID

    # Meanwhile ana signs in to another app of the same provider, with the nonce the console
    # sent: the gateway checks a token's claims in their order and the provider writes nonce
    # before aud, so a token of another sign-in would be refused for its nonce first.
    other_app = context.new_page()
    other_app.goto(proxy.other_app_sign_in(console_request["nonce"]))
    at_the_provider(other_app, provider, "ana")
    other_app.wait_for_url(proxy.other_redirect_uri + "**")
    assert other_app.inner_text("body") == "another-app: signed in"
    foreign = proxy.other_tokens[0]
    claims = id_token_claims(foreign)
    assert claims["aud"] == OTHER_CLIENT and claims["iss"] == proxy.url and claims["nonce"] == console_request["nonce"]
    other_app.close()

    proxy.edit_token = lambda answer: {**answer, "id_token": foreign}  # genuine, signed by the provider: only its audience is wrong
    with capture_logs() as logs:
        at_the_provider(page, provider, "ana")
        page.wait_for_url(gateway.url + "/console/**")  # back at the console: its callback, refusing
    assert id_token_claims(proxy.token_answers[0]["id_token"])["aud"] == CLIENT_ID  # what the console's code was really worth
    refused_without_a_trace(page, gateway, seed, before, logs, "invalid_claim: Invalid claim: 'aud'", foreign, proxy.token_answers[0]["id_token"])
    assert not errors
