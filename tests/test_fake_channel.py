"""The test kit's ``fake`` client protocol and channel type (gateway_core/testing/fake_*.py),
through the real gateway over loopback: both paths (the body forwarded, the core
model in between), whole and streamed, the upstream's failures, the models list,
and what the usage log records. The core's other tests build on them."""

from __future__ import annotations

import pytest

from gateway_core.testing import FakeChat, FakeClient, Fault

PATHS = {"fast path": False, "converted": True}


@pytest.fixture
def key(seed) -> str:
    return seed.key(seed.user("alice"))[1]


@pytest.fixture(params=list(PATHS))
async def gateway(request, seed, fake_upstream, start_gateway):
    upstream = await fake_upstream(FakeChat())
    seed.channel("f", type="fake", base_url=upstream.url, models=["fake-small"], settings={"convert": PATHS[request.param]})
    gateway = start_gateway()
    gateway.upstream = upstream
    return gateway


async def test_a_whole_answer_is_the_upstreams_and_is_logged(gateway, key, seed):
    answer = await FakeClient(gateway.url, key).chat("fake-small", "hello there", max_tokens=10)
    assert answer.status == 200, answer.body
    assert answer.text == "echo: hello there"
    assert answer.body["stop"] == "end_turn" and answer.body["usage"] == {"input": 2, "output": 3}
    assert gateway.upstream.requests[-1]["body"]["max_tokens"] == 10
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert (row["status"], row["input_tokens"], row["output_tokens"], row["protocol"]) == (200, 2, 3, "fake")


async def test_a_stream_comes_piece_by_piece_and_ends_once_recorded(gateway, key, seed):
    answer = await FakeClient(gateway.url, key).chat("fake-small", "one two three", stream=True, max_tokens=3)
    assert answer.status == 200
    assert answer.text == "echo: one two"
    assert [e for e in answer.events if isinstance(e, dict) and "delta" in e] == [{"delta": "echo:"}, {"delta": " one"}, {"delta": " two"}]
    assert {"stop": "max_tokens"}.items() <= next(e for e in answer.events if isinstance(e, dict) and "stop" in e).items()
    assert answer.events[-1] == "[END]"
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert (row["status"], row["output_tokens"]) == (200, 3)


async def test_an_upstream_failure_is_the_clients_error_in_the_protocols_shape(gateway, key):
    gateway.upstream.fail_next(Fault(status=500))
    answer = await FakeClient(gateway.url, key).chat("fake-small")
    assert answer.status == 502
    assert answer.error["kind"] == "upstream" and answer.error["request_id"]


async def test_a_stream_broken_midway_ends_with_an_error_event(gateway, key):
    gateway.upstream.fail_next(Fault(error_after=3))  # after the start, "echo:" and " a"
    answer = await FakeClient(gateway.url, key).chat("fake-small", "a b c", stream=True)
    assert answer.status == 200
    assert answer.text == "echo: a"
    assert answer.error is not None and answer.events[-1] != "[END]"


async def test_a_wrong_key_and_an_unknown_model_are_refused(gateway, key):
    assert (await FakeClient(gateway.url, "sk-wrong").chat("fake-small")).status == 401
    unknown = await FakeClient(gateway.url, key).chat("no-such-model")
    assert unknown.status == 400 and unknown.error["code"] == "model_not_found"


async def test_an_invalid_body_is_refused_before_any_upstream_call(gateway, key):
    answer = await FakeClient(gateway.url, key).send({"model": "fake-small", "messages": []})
    assert answer.status == 400 and "messages" in answer.error["message"]
    assert gateway.upstream.requests == []


async def test_the_models_route_lists_the_keys_models(gateway, key):
    answer = await FakeClient(gateway.url, key).models()
    assert answer.status == 200 and answer.body == {"models": ["fake-small"]}
