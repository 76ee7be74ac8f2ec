"""The channel form's "Fetch models from the upstream", server side: what the form
holds now (type, base URL, keys — blank: the stored ones) asks a fake OpenAI upstream
on loopback through the admin layer's operation; admins only, CSRF checked, and the
upstream's failures in the words of the CLI and the API."""

from __future__ import annotations

import json

import pytest

from gateway_core.testing import Fault
from gateway_openai.fake_upstream import EXPECTED_KEY, MODELS, FakeOpenAI

WRONG = "sk-upstream-wrong-0123456789"


@pytest.fixture
async def upstream(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def stored(seed, users, upstream):
    return seed.channel("up", type="openai", base_url=upstream.url, models=["gpt-4o"], api_keys=(EXPECTED_KEY,))


async def test_the_add_form_lists_the_upstreams_models_with_what_was_typed(gateway, browsers, upstream):
    root = await browsers("root")
    form = {"type": "openai", "base_url": upstream.url + "/v1", "api_keys": EXPECTED_KEY, "models": "gpt-4o", "headers": "X-Team: blue"}
    status, body = await root.post("/console/admin/channels/upstream-models", form, csrf_from="/console/admin/channels/new")
    listed = json.loads(body)
    assert status == 200 and listed["ok"] and listed["models"] == list(MODELS)
    assert listed["message"] == f"the upstream lists {len(MODELS)} models, {len(MODELS)} not yet served by the channel"  # a new channel serves none
    assert upstream.requests[-1]["headers"]["X-Team"] == "blue" and upstream.requests[-1]["headers"]["Authorization"] == f"Bearer {EXPECTED_KEY}"
    status, body = await root.post("/console/admin/channels/upstream-models", {**form, "api_keys": WRONG}, csrf_from="/console/admin/channels/new")
    refused = json.loads(body)
    assert (status, refused["ok"], refused["status"]) == (200, False, 401)
    assert refused["message"] == "the upstream refused the channel's key (401): Incorrect API key provided." and WRONG not in body
    status, body = await root.post("/console/admin/channels/upstream-models", {**form, "base_url": "ftp://x"}, csrf_from="/console/admin/channels/new")
    assert status == 400 and json.loads(body)["message"] == "base url must start with http:// or https://, got 'ftp://x'"
    status, body = await root.post("/console/admin/channels/upstream-models", {"type": "", "base_url": ""}, csrf_from="/console/admin/channels/new")
    assert status == 400 and json.loads(body)["message"] == "type must be chosen first"


async def test_the_edit_form_uses_the_stored_keys_when_none_is_typed(gateway, browsers, upstream, stored):
    root = await browsers("root")
    edit = f"/console/admin/channels/{stored}/edit"
    _, page = await root.get(edit)
    assert "Fetch models from the upstream" in page and f'data-url="/console/admin/channels/{stored}/upstream-models"' in page
    status, body = await root.post(f"/console/admin/channels/{stored}/upstream-models", {"type": "openai", "base_url": upstream.url, "api_keys": ""}, csrf_from=edit)
    listed = json.loads(body)
    assert status == 200 and listed["ok"] and listed["new"] == [m for m in MODELS if m != "gpt-4o"]
    upstream.fail_next(Fault(status=200, body=b"<html>maintenance</html>"))
    status, body = await root.post(f"/console/admin/channels/{stored}/upstream-models", {"type": "openai", "base_url": upstream.url}, csrf_from=edit)
    assert json.loads(body)["message"] == "the upstream answered something that is not a model list"
    status, body = await root.post(f"/console/admin/channels/{stored}/upstream-models", {"type": "demo", "base_url": "local://demo"}, csrf_from=edit)
    assert json.loads(body)["models"] == ["demo-chat"]  # the type chosen in the form, not the stored one


async def test_only_admins_with_the_forms_token(gateway, browsers, stored):
    alice = await browsers("alice")
    status, _ = await alice.post(f"/console/admin/channels/{stored}/upstream-models", {"type": "openai"}, csrf_from="/console/keys")
    assert status == 403
    root = await browsers("root")
    status, _ = await root.post(f"/console/admin/channels/{stored}/upstream-models", {"type": "openai", "csrf": "forged"})
    assert status == 403
    status, _ = await root.post("/console/admin/channels/999/upstream-models", {"type": "openai"}, csrf_from="/console/admin/channels/new")
    assert status == 404
