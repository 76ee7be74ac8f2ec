"""``GET /v1beta/models/{model}`` with google-genai: the model with the token limits
the SDK reads (from the catalogue when it knows the model), and a 404 for one the
key cannot see."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types


@pytest.fixture
def client(seed, start_gateway):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("demo", type="demo", base_url="local://demo", models=["gemini-2.5-flash", "tuned.v2"], settings={"delay_ms": 0})
    seed.channel("vip", type="demo", base_url="local://demo", models=["vip-only"], groups=["vip"])
    gateway = start_gateway()
    options = types.HttpOptions(base_url=gateway.url, api_version="v1beta")
    return genai.Client(api_key=secret, http_options=options)


async def test_get_answers_the_model_with_its_limits(client):
    model = await client.aio.models.get(model="models/gemini-2.5-flash")
    assert model.name == "models/gemini-2.5-flash"
    assert (model.input_token_limit, model.output_token_limit) == (1_048_576, 65_535)  # the catalogue's
    assert "generateContent" in model.supported_actions
    tuned = await client.aio.models.get(model="tuned.v2")
    assert tuned.name == "models/tuned.v2" and tuned.input_token_limit is None
    for hidden in ("vip-only", "no-such-model"):
        with pytest.raises(errors.ClientError) as caught:
            await client.aio.models.get(model=hidden)
        assert caught.value.code == 404
