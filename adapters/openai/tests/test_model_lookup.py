"""``GET /v1/models/{model}`` with the official OpenAI SDK: one model the key may
use, ids with slashes and dots round-tripping, the catalogue's facts where it knows
the model, and a model the key cannot see answered 404 as OpenAI does."""

from __future__ import annotations

import openai
import pytest

MODELS = ["gpt-4o-mini", "accounts/acme/models/llama-v3", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"]


@pytest.fixture
def client(seed, start_gateway):
    user = seed.user("alice")
    _, secret = seed.key(user)
    _, narrow = seed.key(user, name="narrow", models=("gpt-4o-mini",))
    seed.channel("demo", type="demo", base_url="local://demo", models=MODELS, settings={"delay_ms": 0})
    seed.channel("vip", type="demo", base_url="local://demo", models=["vip-only"], groups=["vip"])
    gateway = start_gateway()
    return (openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0),
            openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=narrow, max_retries=0))  # fmt: skip


async def test_retrieve_answers_one_model_the_key_may_use(client):
    everything, narrow = client
    for model_id in MODELS:
        model = await everything.models.retrieve(model_id)
        assert (model.id, model.object, model.owned_by) == (model_id, "model", "relaygate")
    for hidden in ("vip-only", "no-such-model"):  # another group's, and none at all: the same 404
        with pytest.raises(openai.NotFoundError) as caught:
            await everything.models.retrieve(hidden)
        assert caught.value.code == "model_not_found" and f"'{hidden}'" in caught.value.message
    assert (await narrow.models.retrieve("gpt-4o-mini")).id == "gpt-4o-mini"
    with pytest.raises(openai.NotFoundError):  # outside the key's own restriction
        await narrow.models.retrieve("accounts/acme/models/llama-v3")
