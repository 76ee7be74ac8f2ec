"""AWS's credential chain as a bedrock channel's key (``aws:profile=NAME``,
``aws:chain``), resolved by botocore in a thread and kept: a real profile file in a
temporary HOME, environment variables, and web identity against a loopback fake STS
(``AWS_ENDPOINT_URL_STS``); credentials Bedrock refuses as expired are resolved again
once. Nothing reaches the network: instance metadata is turned off."""

from __future__ import annotations

import datetime as dt
import os

import openai
import pytest
from aiohttp import web

from gateway_bedrock.fake_upstream import ACCESS_KEY_ID, SECRET_ACCESS_KEY
from gateway_core.testing import FakeUpstream

NOVA = "amazon.nova-pro-v1:0"
PROFILE_KEY_ID, PROFILE_SECRET, PROFILE_TOKEN = "AKIAFAKEPROFILE00002", "profile/secret+0123456789", "profile-session-token"
ROLE_KEY_ID, ROLE_SECRET = "ASIAFAKEWEBIDENTITY3", "role/secret+0123456789"


@pytest.fixture
def aws_home(tmp_path, monkeypatch):
    """A temporary HOME with empty AWS files, no AWS variables, no instance metadata."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    (tmp_path / "config").write_text("[default]\nregion = us-east-1\n")
    (tmp_path / "credentials").write_text("")
    return tmp_path


@pytest.fixture
def start(seed, start_gateway, bedrock):
    """Starts a gateway whose channel ``aws`` has the key given; returns its OpenAI client."""
    clients = []

    def run(key: str) -> openai.AsyncOpenAI:
        _, secret = seed.key(seed.user("alice"))
        seed.channel("aws", type="bedrock", base_url=bedrock.url, models=[NOVA], api_keys=[key], settings={"region": "us-east-1"})
        gateway = start_gateway()
        clients.append(openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0))
        return clients[-1]

    return run


async def ask(client: openai.AsyncOpenAI) -> str:
    completion = await client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "hello there"}])
    return str(completion.choices[0].message.content)


async def test_a_named_profile_of_the_shared_files(aws_home, start, bedrock, capsys):
    (aws_home / "credentials").write_text(
        f"[dev]\naws_access_key_id = {PROFILE_KEY_ID}\naws_secret_access_key = {PROFILE_SECRET}\naws_session_token = {PROFILE_TOKEN}\n"
    )
    bedrock.credentials[PROFILE_KEY_ID] = PROFILE_SECRET
    bedrock.session_tokens[PROFILE_KEY_ID] = PROFILE_TOKEN
    client = start("aws:profile=dev")
    assert await ask(client) == "echo: hello there"
    assert await ask(client) == "echo: hello there"
    for received in bedrock.requests:
        assert received["headers"]["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={PROFILE_KEY_ID}/")
        assert received["headers"]["X-Amz-Security-Token"] == PROFILE_TOKEN
    logged = capsys.readouterr()
    assert PROFILE_SECRET not in logged.out + logged.err and PROFILE_TOKEN not in logged.out + logged.err


async def test_an_unknown_profile_is_said(aws_home, start, bedrock):
    client = start("aws:profile=missing")
    with pytest.raises(openai.APIStatusError) as failed:
        await ask(client)
    assert failed.value.status_code == 502 and "the AWS profile 'missing' could not be resolved" in failed.value.message
    assert bedrock.requests == []


async def test_the_chain_reads_the_environment(aws_home, start, bedrock, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
    client = start("aws:chain")
    assert await ask(client) == "echo: hello there"
    assert bedrock.requests[-1]["headers"]["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/")
    assert "X-Amz-Security-Token" not in bedrock.requests[-1]["headers"]


async def test_the_chain_with_nothing_configured_is_said(aws_home, start, bedrock):
    client = start("aws:chain")
    with pytest.raises(openai.APIStatusError) as failed:
        await ask(client)
    assert "the AWS credential chain found no credentials" in failed.value.message


class FakeSTS(FakeUpstream):
    """AWS STS's AssumeRoleWithWebIdentity (unsigned, a form body, an XML answer): each
    call mints a new session token, valid for an hour."""

    api_key = None

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/", self.assume)

    async def assume(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        await self.admit(request, form)
        if form.get("Action") != "AssumeRoleWithWebIdentity" or form.get("WebIdentityToken") != "fake-oidc-token":
            return web.Response(status=400, text="<ErrorResponse><Error><Code>InvalidIdentityToken</Code></Error></ErrorResponse>")
        expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        credentials = (f"<AccessKeyId>{ROLE_KEY_ID}</AccessKeyId><SecretAccessKey>{ROLE_SECRET}</SecretAccessKey>"
                       f"<SessionToken>role-token-{len(self.requests)}</SessionToken><Expiration>{expires}</Expiration>")  # fmt: skip
        return web.Response(content_type="text/xml", text=(
            '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>'
            f"<Credentials>{credentials}</Credentials><SubjectFromWebIdentityToken>system:serviceaccount:gw</SubjectFromWebIdentityToken>"
            f"<AssumedRoleUser><Arn>{form['RoleArn']}/s</Arn><AssumedRoleId>AROAFAKE:s</AssumedRoleId></AssumedRoleUser>"
            "</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>sts-1</RequestId></ResponseMetadata>"
            "</AssumeRoleWithWebIdentityResponse>"
        ))  # fmt: skip


async def test_web_identity_against_a_loopback_sts_and_an_expired_token_resolved_again(aws_home, start, bedrock, fake_upstream, monkeypatch):
    sts = await fake_upstream(FakeSTS())
    (aws_home / "token").write_text("fake-oidc-token")
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(aws_home / "token"))
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/gateway")
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", sts.url)
    bedrock.credentials[ROLE_KEY_ID] = ROLE_SECRET
    bedrock.session_tokens[ROLE_KEY_ID] = "role-token-1"
    client = start("aws:chain")
    assert await ask(client) == "echo: hello there"
    assert await ask(client) == "echo: hello there"
    assert len(sts.requests) == 1  # kept: one resolution for both requests
    assert sts.requests[0]["body"]["RoleArn"] == "arn:aws:iam::123456789012:role/gateway"
    assert bedrock.requests[-1]["headers"]["X-Amz-Security-Token"] == "role-token-1"
    bedrock.expired_tokens.add("role-token-1")  # Bedrock now refuses it as expired: resolved again, and the request retried
    bedrock.session_tokens[ROLE_KEY_ID] = "role-token-2"
    assert await ask(client) == "echo: hello there"
    assert len(sts.requests) == 2 and bedrock.requests[-1]["headers"]["X-Amz-Security-Token"] == "role-token-2"


def test_which_keys_name_the_chain():
    from gateway_bedrock.credentials import ChainSource, chain_source
    from gateway_core import UpstreamError

    assert chain_source("aws:chain") == ChainSource(None)
    assert chain_source(" aws:profile=prod ") == ChainSource("prod")
    assert chain_source(f"{ACCESS_KEY_ID}:{SECRET_ACCESS_KEY}") is None and chain_source("ABSKkey") is None
    with pytest.raises(UpstreamError, match="aws:chain or aws:profile=NAME"):
        chain_source("aws:profile=")
