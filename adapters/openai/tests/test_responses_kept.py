"""Kept responses through the official ``openai`` SDK over real HTTP:
``previous_response_id``, ``responses.retrieve`` and ``responses.delete`` on
anthropic and gemini channels (which keep no conversation), for a group that
opts in; the native channel's pass-through; ownership, retention and size."""

from __future__ import annotations

import attrs
import openai
import pytest

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.config import Config, ConfigError
from gateway_gemini.fake_upstream import EXPECTED_KEY as GEMINI_KEY
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import Fault
from gateway_openai.responses_kept import KeptResponses

CLAUDE, GEMINI, GPT = "claude-kept", "gemini-kept", "gpt-native"
KEPT = {"groups": ["team"], "retention_seconds": 3600, "max_per_user": 3, "max_bytes": 20_000}


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), plugins={"openai": {"stored_responses": KEPT}})


@pytest.fixture
async def claude(fake_upstream):
    return await fake_upstream(FakeAnthropic())


@pytest.fixture
async def gemini(fake_upstream):
    return await fake_upstream(FakeGemini())


@pytest.fixture
def keys(seed, upstream, claude, gemini):
    """Secrets of alice and bob (group ``team``, which keeps answers) and carol (``default``, which does not)."""
    groups = ("team", "default")
    seed.channel("claude", type="anthropic", base_url=claude.url, models=[CLAUDE], api_keys=(ANTHROPIC_KEY,), groups=groups)
    seed.channel("gemini", type="gemini", base_url=gemini.url + "/v1beta", models=[GEMINI], api_keys=(GEMINI_KEY,), groups=groups)
    seed.channel("native", type="openai", base_url=upstream.url, models=[GPT], settings={"responses": True}, groups=groups)
    secrets = {}
    for name, group in (("alice", "team"), ("bob", "team"), ("carol", "default")):
        user = seed.user(name, groups=(group,))
        secrets[name] = seed.key(user, group=group)[1]
    return secrets


@pytest.fixture
def sdk(start_gateway, keys):
    gateway = start_gateway()
    return lambda name: openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=keys[name], max_retries=0)


def _texts(contents):
    return [c.get("text") if isinstance(c, dict) else c for c in contents]


@pytest.mark.parametrize("model", [CLAUDE, GEMINI])
async def test_a_conversation_continues_by_id_on_a_converting_channel(sdk, claude, gemini, model, seed):
    alice = sdk("alice")
    first = await alice.responses.create(model=model, input="my name is Ada", instructions="Be brief.")
    second = await alice.responses.create(model=model, input="what is my name?", previous_response_id=first.id)
    assert second.previous_response_id == first.id and second.id != first.id
    if model == CLAUDE:
        messages = claude.requests[-1]["body"]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[0]["content"] in ("my name is Ada", [{"type": "text", "text": "my name is Ada"}])
        assert "system" not in claude.requests[-1]["body"]  # instructions belong to the request that gave them
    else:
        contents = gemini.requests[-1]["body"]["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"]
        assert contents[1]["parts"][0]["text"] == first.output_text
    third = await alice.responses.create(model=model, input="and again", previous_response_id=second.id, stream=True)
    events = [event async for event in third]
    final = events[-1].response
    assert events[-1].type == "response.completed" and final.previous_response_id == second.id
    upstream = claude if model == CLAUDE else gemini
    body = upstream.requests[-1]["body"]
    assert len(body["messages"] if model == CLAUDE else body["contents"]) == 5
    got = await alice.responses.retrieve(final.id)  # kept from a stream too
    assert got.id == final.id and got.output_text == final.output_text and got.previous_response_id == second.id
    rows = seed.rows("SELECT id, user_id, channel_id, items FROM stored_responses ORDER BY created_at")
    assert [row["id"] for row in rows] == [first.id, second.id, final.id] and {row["channel_id"] for row in rows} == {None}


async def test_retrieve_and_delete_belong_to_the_keys_user(sdk, claude):
    alice, bob = sdk("alice"), sdk("bob")
    first = await alice.responses.create(model=CLAUDE, input="secret plan")
    got = await alice.responses.retrieve(first.id)
    assert got.output_text == first.output_text and got.usage.output_tokens == first.usage.output_tokens
    with pytest.raises(openai.NotFoundError):
        await bob.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError):
        await bob.responses.delete(first.id)
    with pytest.raises(openai.BadRequestError) as caught:
        await bob.responses.create(model=CLAUDE, input="tell me", previous_response_id=first.id)
    assert f"Previous response with id '{first.id}' not found" in caught.value.message
    await alice.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        await alice.responses.retrieve(first.id)
    with pytest.raises(openai.BadRequestError):
        await alice.responses.create(model=CLAUDE, input="and then?", previous_response_id=first.id)
    with pytest.raises(openai.NotFoundError):
        await alice.responses.delete(first.id)


async def test_groups_that_do_not_opt_in_keep_nothing(sdk, claude, seed):
    carol = sdk("carol")
    first = await carol.responses.create(model=CLAUDE, input="hello")
    with pytest.raises(openai.NotFoundError):
        await carol.responses.retrieve(first.id)
    with pytest.raises(openai.BadRequestError) as caught:
        await carol.responses.create(model=CLAUDE, input="and then?", previous_response_id=first.id)
    assert "keeps no conversation state" in caught.value.message
    assert seed.rows("SELECT id FROM stored_responses") == []


async def test_store_false_and_oversized_conversations_are_not_kept(sdk, claude, seed):
    alice = sdk("alice")
    unstored = await alice.responses.create(model=CLAUDE, input="off the record", store=False)
    huge = await alice.responses.create(model=CLAUDE, input="x" * 30_000)
    for response in (unstored, huge):
        with pytest.raises(openai.NotFoundError):
            await alice.responses.retrieve(response.id)
    assert seed.rows("SELECT id FROM stored_responses") == []


async def test_a_user_keeps_only_the_newest_answers(sdk, claude, seed):
    alice = sdk("alice")
    ids = [(await alice.responses.create(model=CLAUDE, input=f"turn {n}")).id for n in range(5)]
    kept = {row["id"] for row in seed.rows("SELECT id FROM stored_responses")}
    assert kept == set(ids[-3:])
    with pytest.raises(openai.NotFoundError):
        await alice.responses.retrieve(ids[0])


async def test_expired_answers_are_gone_and_swept(sdk, claude, seed):
    alice = sdk("alice")
    old = await alice.responses.create(model=CLAUDE, input="long ago")
    seed.rows("UPDATE stored_responses SET expires_at = 1 WHERE id = ? RETURNING id", (old.id,))
    with pytest.raises(openai.NotFoundError):
        await alice.responses.retrieve(old.id)
    await alice.responses.create(model=CLAUDE, input="now")  # keeping another sweeps the expired one
    assert old.id not in {row["id"] for row in seed.rows("SELECT id FROM stored_responses")}


async def test_native_channel_holds_its_own_and_is_asked_for_it(sdk, upstream, seed, fake_upstream):
    other = await fake_upstream(type(upstream)())  # a second native channel of the same model: never asked
    seed.channel("native-2", type="openai", base_url=other.url, models=[GPT], settings={"responses": True}, groups=("team",), priority=-1)
    alice, bob = sdk("alice"), sdk("bob")
    first = await alice.responses.create(model=GPT, input="hello")
    row = seed.rows("SELECT channel_id, items FROM stored_responses WHERE id = ?", (first.id,))[0]
    native_id = seed.rows("SELECT id FROM channels WHERE name = 'native'")[0]["id"]
    assert row["items"] is None and row["channel_id"] == native_id  # only which channel holds it
    await alice.responses.create(model=GPT, input="and then?", previous_response_id=first.id)
    body = upstream.requests[-1]["body"]
    assert body["previous_response_id"] == first.id and body["input"] == "and then?"
    upstream.faults.append(Fault(status=503))  # the holder fails: no failover to a channel that does not hold it
    with pytest.raises(openai.APIStatusError):
        await alice.responses.retrieve(first.id)
    got = await alice.responses.retrieve(first.id)  # relayed to the channel that answered
    assert got.id == first.id and upstream.requests[-1]["path"] == f"/v1/responses/{first.id}"
    assert upstream.requests[-1]["headers"]["Authorization"] == "Bearer sk-upstream-test"
    with pytest.raises(openai.NotFoundError):
        await bob.responses.retrieve(first.id)
    await alice.responses.delete(first.id)
    assert upstream.kept == {} and seed.rows("SELECT id FROM stored_responses WHERE id = ?", (first.id,)) == []
    with pytest.raises(openai.NotFoundError):
        await alice.responses.retrieve(first.id)
    assert other.requests == []


async def test_a_native_stream_is_kept_as_its_channel(sdk, upstream, seed):
    alice = sdk("alice")
    stream = await alice.responses.create(model=GPT, input="stream it", stream=True)
    final = [event async for event in stream][-1].response
    rows = seed.rows("SELECT id, channel_id, items FROM stored_responses")
    assert [(row["id"], row["items"]) for row in rows] == [(final.id, None)] and rows[0]["channel_id"] is not None


async def test_an_id_the_upstream_forgot_is_its_404(sdk, upstream, seed):
    alice = sdk("alice")
    first = await alice.responses.create(model=GPT, input="hello")
    upstream.kept.clear()
    with pytest.raises(openai.NotFoundError) as caught:
        await alice.responses.retrieve(first.id)
    assert first.id in caught.value.message
    rows = seed.rows("SELECT endpoint, cost_micros, status FROM usage_logs ORDER BY rowid")
    assert rows[-1] == {"endpoint": "responses.stored", "cost_micros": 0, "status": 404}


def test_settings_are_checked():
    assert KeptResponses.from_settings({}) == KeptResponses()
    assert KeptResponses.from_settings({"stored_responses": KEPT}).keeps("team")
    for bad in ({"groups": "team"}, {"max_bytes": 0}, {"retention_seconds": True}, {"keep": 1}):
        with pytest.raises(ConfigError):
            KeptResponses.from_settings({"stored_responses": bad})
    assert attrs.evolve(KeptResponses(), groups=frozenset({"a"})).keeps("a")


async def test_a_tool_call_continues_by_id_with_its_output(sdk, claude):
    """Codex's loop: the answer calls a tool, the next request sends only the call's
    output with previous_response_id; the upstream sees call and result in order."""
    alice = sdk("alice")
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    claude.tool_uses = [{"id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}}]
    first = await alice.responses.create(model=CLAUDE, input="weather in Rome?", tools=[tool])
    call = first.output[-1]
    assert call.type == "function_call" and call.call_id == "toolu_1"
    claude.tool_uses = None
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
    second = await alice.responses.create(model=CLAUDE, input=[output], tools=[tool], previous_response_id=first.id)
    assert second.previous_response_id == first.id
    messages = claude.requests[-1]["body"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][-1] == {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}}
    assert messages[2]["content"][0]["type"] == "tool_result" and messages[2]["content"][0]["tool_use_id"] == "toolu_1"
