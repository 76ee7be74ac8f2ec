"""A vertex channel added through the management API with a real-shaped key: a service
account's JSON key file, base64-encoded (about 3.2 KB, as ``base64 -w0 key.json`` makes it),
is taken, stored intact (the gateway signs with it: a request answers 200) and leaves
masked; a key longer than the bound every front shares (16384 characters) is refused by the
API and by the CLI with the same words."""

from __future__ import annotations

import base64
import contextlib
import io
import json

import openai
import pytest
import requests

from gateway_core.admin.rules import MAX_UPSTREAM_KEY
from gateway_core.commands.cli import main

from .fake_vertex import PROJECT

GEMINI = "gemini-2.5-flash"


def cli(db: str, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["--db", db, *argv])
    return status, out.getvalue() + err.getvalue()


@pytest.fixture
def admin_api(seed, start_gateway):
    seed.user("root", admin=True)
    status, made = cli(seed.config.db_path, "token", "create", "root", "--scope", "admin", "--json")
    assert status == 0, made
    gateway = start_gateway()
    http = requests.Session()
    http.headers["authorization"] = f"Bearer {json.loads(made)['token']}"
    return gateway, http


async def test_a_service_account_key_in_base64_is_taken_and_works(admin_api, seed, vertex, oauth, account):
    gateway, http = admin_api
    key = base64.b64encode(account.json(oauth.token_uri).encode()).decode()
    assert 2000 < len(key) < MAX_UPSTREAM_KEY
    body = {"name": "vx", "type": "vertex", "base_url": vertex.url + "/v1/", "models": [GEMINI], "api_keys": [key],
            "settings": {"project": PROJECT, "location": "us-central1"}}  # fmt: skip
    made = http.post(gateway.url + "/api/v1/channels", json=body, timeout=30)
    assert made.status_code == 201, made.text
    assert key not in made.text and key[:40] not in made.text  # the key leaves masked

    _, secret = seed.key(seed.user("alice"))
    seed.price(GEMINI, 0, 0, free=True)
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0) as client:
        answer = await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "signed"}])
    assert answer.choices[0].message.content == "echo: signed"
    assert len(oauth.requests) == 1 and vertex.requests[-1]["path"].startswith(f"/v1/projects/{PROJECT}/locations/us-central1/")


async def test_a_key_over_the_bound_is_refused_by_the_api_and_the_cli_alike(admin_api, seed, vertex):
    gateway, http = admin_api
    too_long = "A" * (MAX_UPSTREAM_KEY + 1)
    body = {"name": "vx", "type": "vertex", "base_url": vertex.url + "/v1/", "models": [GEMINI], "api_keys": [too_long],
            "settings": {"project": PROJECT}}  # fmt: skip
    refused = http.post(gateway.url + "/api/v1/channels", json=body, timeout=30)
    assert refused.status_code == 400, refused.text
    assert str(MAX_UPSTREAM_KEY) in refused.json()["error"]["message"] and too_long not in refused.text

    status, said = cli(seed.config.db_path, "channel", "add", "vx", "--type", "vertex", "--base-url", vertex.url + "/v1/", "--models", GEMINI,
                       "--api-key", too_long, "--setting", f"project={PROJECT}")  # fmt: skip
    assert status != 0 and f"at most {MAX_UPSTREAM_KEY}" in said and too_long not in said
    assert http.get(gateway.url + "/api/v1/channels", timeout=30).json() == []
