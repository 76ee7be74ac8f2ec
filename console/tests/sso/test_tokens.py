"""Single sign-on's checks of what comes back from the provider, without a browser:
ID tokens verified against the real provider's discovery document and keys
(``oidc-provider`` on loopback, ``conftest.py``), signed with its own key (so
only the claim under test is wrong) or with a key it does not hold; the state
checked at the callback; keys refetched after a rotation."""

from __future__ import annotations

import base64
import time
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from joserfc import jwt

from gateway_console.sso.oidc import Flow, OpenIdProvider, SignOnFailed
from gateway_console.sso.settings import sso_settings
from gateway_core.config import Config



@pytest.fixture
def provider(oidc):
    return oidc().start("http://127.0.0.1:9/console/sso/callback", "http://127.0.0.1:9/console/login")


@pytest.fixture
async def client(provider):
    async with aiohttp.ClientSession() as http:
        settings = sso_settings(provider.settings(), {})
        assert settings is not None
        yield OpenIdProvider(settings, http)


def id_token(provider, key=None, **changes) -> str:
    now = int(time.time())
    claims = {"iss": provider.issuer, "aud": provider.client_id, "sub": "ana", "exp": now + 300, "iat": now, "nonce": "the-nonce",
              "email": "ana@example.com", **changes}  # fmt: skip
    key = key or provider.key
    return jwt.encode({"alg": "RS256", "kid": key.kid}, {k: v for k, v in claims.items() if v is not None}, key)


async def test_a_token_signed_by_the_providers_key_with_the_right_claims_is_accepted(provider, client):
    claims = await client.verify(id_token(provider), "the-nonce")
    assert claims["email"] == "ana@example.com" and claims["aud"] == provider.client_id


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"aud": "another-app"}, "aud"),  # a token the provider gave another application
        ({"nonce": "another-nonce"}, "nonce"),  # a token of another sign-in, replayed
        ({"iss": "http://127.0.0.1:9"}, "iss"),
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"nonce": None}, "nonce"),
    ],
)
async def test_wrong_claims_are_refused(provider, client, changes, reason):
    with pytest.raises(SignOnFailed, match=reason):
        await client.verify(id_token(provider, **changes), "the-nonce")


async def test_a_tampered_token_is_refused(provider, client):
    forged = id_token(provider, key=provider.new_key(provider.key.kid))  # the provider's key id, another key
    with pytest.raises(SignOnFailed, match="bad_signature"):
        await client.verify(forged, "the-nonce")
    genuine = id_token(provider).split(".")
    altered = ".".join([genuine[0], id_token(provider, email="root@example.com").split(".")[1], genuine[2]])
    with pytest.raises(SignOnFailed, match="bad_signature"):
        await client.verify(altered, "the-nonce")
    header = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    unsigned = f"{header}.{genuine[1]}."
    with pytest.raises(SignOnFailed):
        await client.verify(unsigned, "the-nonce")


async def test_a_key_the_provider_rotated_in_is_fetched_again(provider, client):
    await client.verify(id_token(provider), "the-nonce")  # the key set is kept now
    provider.rotate("http://127.0.0.1:9/console/sso/callback", "http://127.0.0.1:9/console/login")
    with pytest.raises(SignOnFailed, match="kid"):  # read again at most every few seconds
        await client.verify(id_token(provider), "the-nonce")
    client.keys_refresh_seconds = 0
    claims = await client.verify(id_token(provider), "the-nonce")  # a kid it did not know: read again
    assert claims["sub"] == "ana"
    stranger = provider.new_key("never-published")
    with pytest.raises(SignOnFailed, match="kid"):
        await client.verify(id_token(provider, key=stranger), "the-nonce")


async def test_the_authorization_request_uses_pkce_s256_state_and_nonce(provider, client):
    flow = Flow.new()
    url = await client.authorization_url(flow, "http://127.0.0.1:9/console/sso/callback")
    query = parse_qs(urlsplit(url).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0] != flow.verifier
    assert query["state"] == [flow.state] and query["nonce"] == [flow.nonce] and query["response_type"] == ["code"]
    async with aiohttp.ClientSession() as http, http.get(url, allow_redirects=False) as answer:
        assert answer.status in (302, 303), await answer.text()  # the provider accepts it: on to its sign-in page
        assert "/interaction/" in answer.headers["location"]


async def test_the_callback_refuses_a_wrong_state_and_a_missing_sign_in(provider, seed, users, start_gateway, relaygate_config):
    config = Config(db_path=relaygate_config.db_path, plugins={"console": {"sso": provider.settings()}})
    gateway = start_gateway(config)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(gateway.url + "/console/sso/callback?code=abc&state=xyz", allow_redirects=False) as answer:
            assert answer.status == 400 and "not started here" in await answer.text()
        async with http.get(gateway.url + "/console/sso/login", allow_redirects=False) as answer:
            assert answer.status == 303
            state = parse_qs(urlsplit(answer.headers["location"]).query)["state"][0]
        async with http.get(gateway.url + "/console/sso/callback?code=abc&state=not-" + state, allow_redirects=False) as answer:
            assert answer.status == 400 and "state differs" in await answer.text()
            assert "rg_session" not in " ".join(answer.headers.getall("set-cookie", []))
        async with http.get(gateway.url + "/console/sso/callback?code=abc&state=" + state, allow_redirects=False) as answer:
            assert answer.status == 400  # that sign-in is over: its state cannot be tried again
        async with http.get(gateway.url + "/console/sso/login", allow_redirects=False) as answer:
            state = parse_qs(urlsplit(answer.headers["location"]).query)["state"][0]
        async with http.get(gateway.url + "/console/sso/callback?code=abc&iss=http%3A%2F%2F127.0.0.1%3A9&state=" + state, allow_redirects=False) as answer:
            assert answer.status == 401 and "another issuer" in await answer.text()  # RFC 9207: another provider's answer
        async with http.get(gateway.url + "/console/sso/login", allow_redirects=False) as answer:
            state = parse_qs(urlsplit(answer.headers["location"]).query)["state"][0]
        async with http.get(gateway.url + "/console/sso/callback?code=abc&state=" + state, allow_redirects=False) as answer:
            assert answer.status == 401 and "refused the code" in await answer.text()  # the right state: on to the provider, which knows no such code
