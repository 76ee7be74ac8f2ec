"""An azure channel's upstream models are its resource's deployments: the fake's list
proven with a plain HTTP client (the openai SDK has no deployments call), then listed
through the admin layer's operation (the test kit's runner), the management API and
``relaygate channel models --fetch``, with an API key or an Entra ID token; a refused
key and an api-version the resource does not serve are said in one message, never with
the key."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json

import aiohttp
import pytest

from gateway_azure.channel import AzureChannel
from gateway_azure.listing import DEPLOYMENTS_API_VERSION
from gateway_core.commands.cli import main
from gateway_core.testing import upstream_models

from .fake_azure import AZURE_KEY

WRONG = "azure-key-wrong-0123456789"


def entra_settings(entra) -> dict[str, str]:
    return {"auth": "entra_id", "tenant_id": entra.tenant, "client_id": entra.client_id, "authority": entra.url}


async def http_get(url: str, **headers: str) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
        return response.status, await response.json()


# --- the fake, as a plain HTTP client sees it ------------------------------------------------


async def test_the_fake_lists_deployments_in_azures_shape(azure, entra):
    azure.unready["new-dep"] = "gpt-4.1"
    url = f"{azure.url}/openai/deployments"
    status, listed = await http_get(f"{url}?api-version={DEPLOYMENTS_API_VERSION}", **{"api-key": AZURE_KEY})
    assert status == 200 and listed["object"] == "list"
    assert [(d["id"], d["model"], d["status"], d["object"]) for d in listed["data"]] == [
        ("chat-dep", "gpt-4o-mini-2024-07-18", "succeeded", "deployment"),
        ("embed-dep", "text-embedding-3-small", "succeeded", "deployment"),
        ("new-dep", "gpt-4.1", "running", "deployment"),
    ]
    async with aiohttp.ClientSession() as http:
        form = {"grant_type": "client_credentials", "client_id": entra.client_id, "client_secret": entra.client_secret, "scope": entra.scope}
        async with http.post(f"{entra.url}/{entra.tenant}/oauth2/v2.0/token", data=form) as response:
            token = (await response.json())["access_token"]
    status, _ = await http_get(f"{url}?api-version={DEPLOYMENTS_API_VERSION}", Authorization=f"Bearer {token}")
    assert status == 200
    status, refused = await http_get(f"{url}?api-version={DEPLOYMENTS_API_VERSION}", **{"api-key": WRONG})
    assert status == 401 and refused["error"]["code"] == "401"
    status, missing = await http_get(url, **{"api-key": AZURE_KEY})
    assert (status, missing["error"]["message"]) == (404, "Resource not found")
    status, inference = await http_get(f"{url}?api-version=2024-10-21", **{"api-key": AZURE_KEY})  # an inference version
    assert (status, inference["error"]["message"]) == (400, "API version not supported")


# --- the admin layer's operation (the test kit's runner) ---------------------------------------


async def test_the_deployments_that_serve_are_listed_with_the_api_key(azure):
    azure.unready["new-dep"] = "gpt-4.1"
    listed = await upstream_models(AzureChannel(), azure.url + "/openai/v1", AZURE_KEY, models=("chat-dep",))
    assert listed.ok, listed.message
    assert listed.models == ("chat-dep", "embed-dep") and listed.new == ("embed-dep",)  # not the one being created
    sent = azure.requests[-1]
    assert sent["path"] == f"/openai/deployments?api-version={DEPLOYMENTS_API_VERSION}" and sent["headers"]["api-key"] == AZURE_KEY
    assert "Authorization" not in sent["headers"]


async def test_the_deployments_are_listed_with_an_entra_id_token(azure, entra):
    channel_type = AzureChannel()
    listed = await upstream_models(channel_type, azure.url, entra.client_secret, settings=entra_settings(entra))
    assert listed.ok and listed.models == ("chat-dep", "embed-dep"), listed.message
    token = azure.requests[-1]["headers"]["Authorization"].removeprefix("Bearer ")
    assert "api-key" not in azure.requests[-1]["headers"] and entra.valid(token)
    again = await upstream_models(channel_type, azure.url, entra.client_secret, settings=entra_settings(entra))
    assert again.ok and len(entra.requests) == 1  # the cached token, as requests use it
    entra.issued.clear()  # revoked: Azure refuses it; the cache forgets it and the next listing fetches a new one
    refused = await upstream_models(channel_type, azure.url, entra.client_secret, settings=entra_settings(entra))
    assert not refused.ok and refused.status == 401
    assert (await upstream_models(channel_type, azure.url, entra.client_secret, settings=entra_settings(entra))).ok
    assert len(entra.requests) == 2
    wrong = await upstream_models(AzureChannel(), azure.url, "not-the-secret-42", settings=entra_settings(entra))
    assert not wrong.ok and wrong.message.startswith("Microsoft Entra ID refused the channel's credentials (401): invalid_client: AADSTS7000215")
    assert "not-the-secret-42" not in wrong.message


async def test_a_refused_key_and_an_unserved_api_version_are_one_message(azure):
    refused = await upstream_models(AzureChannel(), azure.url, WRONG)
    assert (refused.ok, refused.status, refused.models) == (False, 401, ())
    assert refused.message.startswith("the upstream refused the channel's key (401): Access denied due to invalid subscription key")
    assert WRONG not in refused.message
    azure.list_versions = frozenset(("2023-03-15-preview",))  # a resource that no longer lists at 2022-12-01
    retired = await upstream_models(AzureChannel(), azure.url, AZURE_KEY)
    assert (retired.ok, retired.status) == (False, 400)
    assert retired.message == (
        f"the Azure resource does not list its deployments at /openai/deployments?api-version={DEPLOYMENTS_API_VERSION} "
        "(400: API version not supported); put the deployments you created in the channel's models, "
        "or map each client model to its deployment with --model-map MODEL=DEPLOYMENT"
    )


# --- the management API and the CLI ------------------------------------------------------------


def admin_token(db: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--db", db, "token", "create", "root", "--scope", "admin", "--json"]) == 0
    return str(json.loads(out.getvalue())["token"])


async def test_the_api_and_the_cli_list_the_deployments(seed, start_gateway, azure, entra, capsys):
    seed.user("root", admin=True)
    keyed = seed.channel("az-key", type="azure", base_url=azure.url, api_keys=[WRONG, AZURE_KEY], models=["gpt-4o-mini"],
                         model_map={"gpt-4o-mini": "chat-dep"}, free_unpriced=False)  # fmt: skip
    seed.channel("az-entra", type="azure", base_url=azure.url, api_keys=[entra.client_secret], models=["chat-dep"],
                 settings=entra_settings(entra), free_unpriced=False)  # fmt: skip
    gateway = start_gateway()
    db = seed.config.db_path
    bearer = {"Authorization": f"Bearer {admin_token(db)}"}
    capsys.readouterr()
    async with aiohttp.ClientSession(headers=bearer) as http:
        async with http.get(f"{gateway.url}/api/v1/channels/{keyed}/upstream-models?key=1") as response:
            listed = await response.json()
        assert response.status == 200 and listed["ok"] and listed["models"] == ["chat-dep", "embed-dep"]
        assert listed["new"] == ["chat-dep", "embed-dep"] and listed["unpriced"] == ["chat-dep", "embed-dep"]  # deployment names
        async with http.get(f"{gateway.url}/api/v1/channels/{keyed}/upstream-models") as response:
            refused = await response.json()
        assert (refused["ok"], refused["status"], refused["key_index"]) == (False, 401, 0) and WRONG not in json.dumps(refused)
        draft = {"type": "azure", "base_url": azure.url + "/openai", "api_keys": [entra.client_secret], "settings": entra_settings(entra)}
        async with http.post(f"{gateway.url}/api/v1/channels/upstream-models", json=draft) as response:
            drafted = await response.json()
        assert response.status == 200 and drafted["ok"] and drafted["models"] == ["chat-dep", "embed-dep"], drafted

    def cli(*argv: str) -> tuple[int, str]:
        status = main([*argv, "--db", db])
        out, err = capsys.readouterr()
        assert AZURE_KEY not in out + err and entra.client_secret not in out + err
        return status, out + err

    status, out = await asyncio.to_thread(cli, "channel", "models", "az-entra", "--fetch")
    assert status == 0 and out.splitlines()[0].startswith("az-entra: the upstream lists 2 models, 1 not yet served by the channel (")
    assert [line.split() for line in out.splitlines()[1:]] == [["chat-dep", "served", "no", "price"], ["embed-dep", "new", "no", "price"]]
    status, out = await asyncio.to_thread(cli, "channel", "add", "az-new", "--type", "azure", "--base-url", azure.url, "--api-key", AZURE_KEY, "--fetch-models")
    assert status == 0 and [line.split() for line in out.splitlines()[1:3]] == [["chat-dep", "served", "no", "price"], ["embed-dep", "served", "no", "price"]]
    assert out.count("warning: no price for chat-dep, embed-dep, from you or the catalogue") == 1
    azure.list_versions = frozenset()
    status, out = await asyncio.to_thread(cli, "channel", "models", "az-key", "--fetch", "--key", "1")
    assert status == 1 and out == (
        f"az-key: FAILED: the Azure resource does not list its deployments at /openai/deployments?api-version={DEPLOYMENTS_API_VERSION} "
        "(400: API version not supported); put the deployments you created in the channel's models, "
        "or map each client model to its deployment with --model-map MODEL=DEPLOYMENT\n"
    )
