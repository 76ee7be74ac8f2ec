"""``GET /api/v1/channels/{id}/upstream-models`` over real HTTP: the models a channel's
upstream (a fake OpenAI server on loopback) offers, asked with the channel's key;
admins only; the upstream's failures as messages; listed in the OpenAPI document."""

from __future__ import annotations

import contextlib
import io
import json

import aiohttp
import pytest

from gateway_core.commands.cli import main
from gateway_core.testing import Fault
from gateway_openai.fake_upstream import EXPECTED_KEY, MODELS, FakeOpenAI

WRONG_KEY = "sk-upstream-refused-0123456789"


def token(db: str, user: str, scope: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--db", db, "token", "create", user, "--scope", scope, "--json"]) == 0
    return str(json.loads(out.getvalue())["token"])


@pytest.fixture
async def site(seed, start_gateway, fake_upstream):
    upstream = await fake_upstream(FakeOpenAI())
    seed.user("root", admin=True)
    seed.user("alice")
    ids = {
        "up": seed.channel("up", type="openai", base_url=upstream.url + "/v1", models=["gpt-4o"], api_keys=(WRONG_KEY, EXPECTED_KEY)),
        "demo": seed.channel("demo", type="demo", base_url="local://demo", models=["demo-1"], api_keys=()),
    }
    gateway = start_gateway()
    db = seed.config.db_path
    return gateway, upstream, ids, {"root": token(db, "root", "admin"), "alice": token(db, "alice", "write")}


async def get(gateway, path: str, bearer: str) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as http, http.get(gateway.url + "/api/v1" + path, headers={"Authorization": f"Bearer {bearer}"}) as response:
        return response.status, await response.json()


async def test_an_admin_lists_the_upstreams_models_with_the_channels_key(site):
    gateway, upstream, ids, tokens = site
    status, listed = await get(gateway, f"/channels/{ids['up']}/upstream-models?key=1", tokens["root"])
    assert status == 200 and listed["ok"] is True and listed["models"] == list(MODELS) and listed["key_index"] == 1
    assert listed["new"] == [m for m in MODELS if m != "gpt-4o"] and listed["message"].startswith(f"the upstream lists {len(MODELS)} models")
    assert upstream.requests[-1]["path"] == "/v1/models" and upstream.requests[-1]["headers"]["Authorization"] == f"Bearer {EXPECTED_KEY}"
    status, matching = await get(gateway, f"/channels/{ids['up']}/upstream-models?key=1&match=o3*", tokens["root"])
    assert matching["models"] == ["o3-mini"]
    status, demo = await get(gateway, f"/channels/{ids['demo']}/upstream-models", tokens["root"])
    assert status == 200 and demo["models"] == ["demo-chat"] and demo["unpriced"] == ["demo-chat"]
    assert listed["unpriced"] == [] and listed["warning"] is None  # the fake's models are all in the catalogue
    assert demo["warning"] == (  # the words of the CLI's channel add and channel models --add
        "no price for demo-chat, from you or the catalogue: requests to them are refused (403 model_not_priced) "
        "until you set one (relaygate price set MODEL --input USD --output USD, or relaygate price import FILE)"
    )


async def test_the_upstreams_refusal_and_failures_are_messages_without_the_key(site):
    gateway, upstream, ids, tokens = site
    status, refused = await get(gateway, f"/channels/{ids['up']}/upstream-models", tokens["root"])  # key #0, the wrong one
    assert status == 200 and (refused["ok"], refused["status"], refused["key_index"], refused["models"]) == (False, 401, 0, [])
    assert refused["message"] == "the upstream refused the channel's key (401): Incorrect API key provided."
    upstream.fail_next(Fault(status=200, body=b"<html>a login page</html>"))
    status, odd = await get(gateway, f"/channels/{ids['up']}/upstream-models?key=1", tokens["root"])
    assert odd["message"] == "the upstream answered something that is not a model list"
    status, missing = await get(gateway, f"/channels/{ids['up']}/upstream-models?key=7", tokens["root"])
    assert missing["message"] == "the channel has no upstream key #7 (it has 2)"
    assert WRONG_KEY not in json.dumps([refused, odd, missing]) and EXPECTED_KEY not in json.dumps([refused, odd, missing])


async def test_only_admins_and_known_channels(site):
    gateway, _, ids, tokens = site
    status, error = await get(gateway, f"/channels/{ids['up']}/upstream-models", tokens["alice"])
    assert status == 403 and error["error"]["message"]
    status, error = await get(gateway, "/channels/999/upstream-models", tokens["root"])
    assert status == 404
    status, error = await get(gateway, f"/channels/{ids['up']}/upstream-models?key=x", tokens["root"])
    assert status == 400 and error["error"]["field"] == "key"
    async with aiohttp.ClientSession() as http, http.get(gateway.url + "/api/openapi.json") as response:
        spec = await response.json()
    operation = spec["paths"]["/api/v1/channels/{channel_id}/upstream-models"]["get"]
    assert [param["name"] for param in operation["parameters"] if param["in"] == "query"] == ["key", "match"]
    assert set(operation["responses"]) >= {"200", "401", "403", "404"}


async def test_an_upstream_is_asked_before_its_channel_is_added(site):
    gateway, upstream, _, tokens = site
    body = {"type": "openai", "base_url": upstream.url + "/v1/", "api_keys": [EXPECTED_KEY], "headers": {"X-Team": "blue"}, "match": "gpt-*"}
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {tokens['root']}"}) as http:
        async with http.post(gateway.url + "/api/v1/channels/upstream-models", json=body) as response:
            assert response.status == 200
            listed = await response.json()
        assert listed["ok"] and listed["models"] == ["gpt-4o-mini", "gpt-4o"] and listed["new"] == listed["models"]
        assert upstream.requests[-1]["headers"]["X-Team"] == "blue"
        async with http.post(gateway.url + "/api/v1/channels/upstream-models", json={**body, "base_url": "ftp://x"}) as response:
            assert response.status == 400 and "must start with http:// or https://" in (await response.json())["error"]["message"]
        async with http.post(gateway.url + "/api/v1/channels/upstream-models", json={"type": "openai"}) as response:
            assert response.status == 400 and (await response.json())["error"]["field"] == "base_url"
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {tokens['alice']}"}) as http:
        async with http.post(gateway.url + "/api/v1/channels/upstream-models", json=body) as response:
            assert response.status == 403
