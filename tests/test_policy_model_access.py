"""The model-access policy, names matched exactly: an unknown model is 400
model_not_found; a model outside the key's restriction or its group is 403
model_not_allowed saying why (the spec), or, with hide_forbidden_models, the same
400 as an unknown one ("not found or not permitted")."""

import pytest

from gateway_core.client_protocol import Call
from gateway_core.errors import InvalidRequestError, PermissionDeniedError
from gateway_core.policies.model_access import ModelAccess
from gateway_core.records import ChannelRecord
from gateway_core.routing.router import ChannelIndex
from gateway_core.testing import make_context, make_key_record


class Router:
    def __init__(self, index):
        self._index = index
        self.calls = 0

    async def index(self):
        self.calls += 1
        return self._index


def channel(name, models, groups, enabled=True):
    return ChannelRecord(
        id=hash(name) % 1000, name=name, type="openai", base_url="http://x", api_keys=("k",),
        models=tuple(models), model_map={}, groups=tuple(groups), enabled=enabled,
    )  # fmt: skip


@pytest.fixture
def services():
    index = ChannelIndex(
        [
            channel("a", ["gpt-4o", "gpt-4o-mini"], ["default"]),
            channel("b", ["claude-x"], ["vip"]),
            channel("off", ["retired-model"], ["default"], enabled=False),
        ],
        serves=lambda c, e: True,
    )

    class Services:
        router = Router(index)

    return Services()


def ctx_for(model, **key_fields):
    call = Call(protocol="openai", endpoint="chat", wire="openai.chat", model=model, stream=False, body={})
    return make_context(key=make_key_record(**key_fields), call=call)


async def test_a_model_of_the_group_passes(services):
    await ModelAccess().admit(ctx_for("gpt-4o"), services)
    await ModelAccess().admit(ctx_for("gpt-4o", models=("gpt-4o",)), services)


@pytest.mark.parametrize("model", ["nope", "GPT-4O", "gpt-4o ", "gpt4o", "retired-model"])
async def test_models_no_channel_serves_are_400_model_not_found(services, model):
    with pytest.raises(InvalidRequestError) as caught:
        await ModelAccess().admit(ctx_for(model), services)
    error = caught.value
    assert (error.status, error.code, error.param) == (400, "model_not_found", "model")
    assert f"'{model}'" in error.message and "GET /v1/models" in error.message


async def test_a_model_outside_the_keys_restriction_is_403(services):
    with pytest.raises(PermissionDeniedError) as caught:
        await ModelAccess().admit(ctx_for("gpt-4o-mini", models=("gpt-4o",)), services)
    error = caught.value
    assert (error.status, error.code) == (403, "model_not_allowed")
    assert "'gpt-4o-mini'" in error.message and "restricted" in error.message and "GET /v1/models" in error.message
    assert error.message.startswith("This API key lacks permission for the model 'gpt-4o-mini'")


async def test_a_model_of_another_group_is_403(services):
    with pytest.raises(PermissionDeniedError) as caught:
        await ModelAccess().admit(ctx_for("claude-x"), services)
    assert "'claude-x'" in caught.value.message and "group 'default'" in caught.value.message and "lacks permission" in caught.value.message
    # the restriction cannot open a model the group does not serve
    with pytest.raises(PermissionDeniedError, match="group"):
        await ModelAccess().admit(ctx_for("claude-x", models=("claude-x",)), services)


@pytest.mark.parametrize("model, key_models", [("claude-x", ()), ("gpt-4o-mini", ("gpt-4o",)), ("no-such-model", ())])
async def test_hidden_a_model_of_another_group_reads_as_an_unknown_one(services, model, key_models):
    with pytest.raises(InvalidRequestError) as caught:
        await ModelAccess(hide=True).admit(ctx_for(model, models=key_models), services)
    error = caught.value
    assert (error.status, error.code, error.param) == (400, "model_not_found", "model")
    assert error.message == f"The model '{model}' was not found or is not permitted for this key. GET /v1/models lists the models your key may use."


async def test_listing_models_is_left_to_the_router(services):
    call = Call(protocol="openai", endpoint="models", wire="openai.models", model="", stream=False, body={})
    await ModelAccess().admit(make_context(key=make_key_record(), call=call), services)
    assert services.router.calls == 0
