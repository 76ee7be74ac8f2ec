"""``GET /v1/models/{model_id}`` with the official Anthropic SDK: Anthropic's model
object for a model the key may use, and its 404 for one it cannot see."""

from __future__ import annotations

import anthropic
import pytest


@pytest.fixture
def client(seed, start_gateway):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("demo", type="demo", base_url="local://demo", models=["claude-sonnet-4-5", "us.anthropic.claude-3-haiku-v1:0"], settings={"delay_ms": 0})
    seed.channel("vip", type="demo", base_url="local://demo", models=["vip-only"], groups=["vip"])
    gateway = start_gateway()
    return anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)


async def test_retrieve_answers_anthropics_model_object(client):
    for model_id in ("claude-sonnet-4-5", "us.anthropic.claude-3-haiku-v1:0"):
        model = await client.models.retrieve(model_id)
        assert (model.id, model.type, model.display_name) == (model_id, "model", model_id)
        assert model.created_at.year >= 1970
    for hidden in ("vip-only", "no-such-model"):
        with pytest.raises(anthropic.NotFoundError) as caught:
            await client.models.retrieve(hidden)
        assert caught.value.body["error"]["type"] == "not_found_error"
