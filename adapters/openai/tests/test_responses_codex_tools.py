"""Codex's tools through conversion: ``namespace`` tools flattened into functions whose
calls come back with their namespace and name, ``custom`` tools as functions taking a
string (their calls back as ``custom_tool_call``), ``web_search`` as the channel's own
web search, ``additional_tools`` input items included, and a 400 naming a tool type
the channel has no equivalent for — on an anthropic and a gemini channel, recorded on
the wire and through the official ``openai`` SDK."""

from __future__ import annotations

import json

import openai
import pytest

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_anthropic.messages_request import request_to_wire as anthropic_wire
from gateway_gemini.fake_upstream import FakeGemini
from gateway_gemini.request import request_to_wire as gemini_wire
from gateway_openai.responses_request import request_from_wire
from gateway_openai.responses_tools import flat_name

CLAUDE, GEMINI, CHAT = "claude-codex", "gemini-codex", "chat-codex"
FLAT_NAMES = ["shell", "apply_patch", "mcp__files__read", "mcp__files__list"]


def codex_body(examples, model: str) -> dict:
    return {**examples.json("responses_request_codex_namespace.json"), "model": model}


# --- recorded wire, no gateway -------------------------------------------------------


def test_codex_request_for_anthropic(examples) -> None:
    body = anthropic_wire(request_from_wire(codex_body(examples, CLAUDE)), "claude-sonnet-4-5")
    tools = body["tools"]
    assert [t["name"] for t in tools] == [*FLAT_NAMES, "web_search"]
    assert tools[1]["input_schema"]["properties"] == {"input": {"type": "string", "description": "The tool's input, as free-form text."}}
    assert tools[2]["input_schema"]["required"] == ["path"] and tools[2]["description"] == "Read a file."
    assert tools[4] == {"type": "web_search_20250305", "name": "web_search"}
    assert body["system"] == "You are Codex, a coding agent."
    calls = [b for m in body["messages"] for b in m["content"] if isinstance(b, dict) and b["type"] == "tool_use"]
    assert calls == [
        {"type": "tool_use", "id": "call_r1", "name": "mcp__files__read", "input": {"path": "README.md"}},
        {"type": "tool_use", "id": "call_p1", "name": "apply_patch", "input": {"input": "*** Begin Patch\n*** End Patch"}},
    ]


def test_codex_request_for_gemini(examples) -> None:
    body = gemini_wire(request_from_wire(codex_body(examples, GEMINI)), model="gemini-3-pro-preview")
    declarations, search = body["tools"]
    assert [d["name"] for d in declarations["functionDeclarations"]] == FLAT_NAMES and search == {"googleSearch": {}}
    # Gemini 2.5 refuses Google Search beside functions: the functions go alone
    assert gemini_wire(request_from_wire(codex_body(examples, GEMINI)), model="gemini-2.5-pro")["tools"] == [declarations]
    search_only = {**codex_body(examples, GEMINI), "input": "news?", "tools": [{"type": "web_search"}]}
    assert gemini_wire(request_from_wire(search_only), model="gemini-2.5-flash")["tools"] == [{"googleSearch": {}}]
    calls = [p["functionCall"] for c in body["contents"] for p in c["parts"] if "functionCall" in p]
    assert [(c["name"], c["args"]) for c in calls] == [("mcp__files__read", {"path": "README.md"}),
                                                       ("apply_patch", {"input": "*** Begin Patch\n*** End Patch"})]  # fmt: skip


def test_flat_names_are_valid_everywhere_and_stable() -> None:
    assert flat_name("mcp__files", "read") == "mcp__files__read" and flat_name(None, "shell") == "shell"
    long = flat_name("mcp__a_very_long_server_name_that_goes_on_and_on", "and_a_tool_with_a_long_name_too")
    assert len(long) == 64 and long == flat_name("mcp__a_very_long_server_name_that_goes_on_and_on", "and_a_tool_with_a_long_name_too")
    odd = flat_name("srv.v2", "do it")
    assert all(c.isalnum() or c in "_-" for c in odd) and odd != flat_name("srv_v2", "do_it")


# --- through the gateway with the openai SDK ---------------------------------------------


@pytest.fixture
async def claude(fake_upstream):
    return await fake_upstream(FakeAnthropic())


@pytest.fixture
async def gemini(fake_upstream):
    return await fake_upstream(FakeGemini())


@pytest.fixture
def client(start_gateway, seed, claude, gemini, upstream):
    user = seed.user("dev")
    _, secret = seed.key(user)
    seed.channel("claude", type="anthropic", base_url=claude.url, models=[CLAUDE], model_map={CLAUDE: "claude-sonnet-4-5"},
                 api_keys=(ANTHROPIC_KEY,))
    seed.channel("gemini", type="gemini", base_url=gemini.url, models=[GEMINI], model_map={GEMINI: "gemini-3-pro-preview"})
    seed.channel("chat", type="openai", base_url=upstream.url, models=[CHAT], settings={"responses": False})  # fmt: skip
    gateway = start_gateway()
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)


def sdk_args(examples, model: str) -> dict:
    body = codex_body(examples, model)
    return {"model": model, "input": body["input"], "tools": body["tools"], "store": False, "parallel_tool_calls": False}


async def test_namespaced_call_from_claude_comes_back_with_its_namespace(client, claude, examples) -> None:
    claude.tool_uses = [{"id": "toolu_9", "name": "mcp__files__list", "input": {"path": "docs"}}]
    async with client.responses.stream(**sdk_args(examples, CLAUDE)) as stream:
        kinds = [e.type async for e in stream]
        final = await stream.get_final_response()
    call = final.output[0]
    assert (call.type, call.namespace, call.name, call.call_id) == ("function_call", "mcp__files", "list", "toolu_9")
    assert json.loads(call.arguments) == {"path": "docs"} and "response.function_call_arguments.delta" in kinds
    sent = claude.requests[-1]["body"]
    assert [t["name"] for t in sent["tools"]] == [*FLAT_NAMES, "web_search"] and sent["tools"][4]["type"] == "web_search_20250305"


async def test_custom_call_from_claude_comes_back_as_custom_tool_call(client, claude, examples) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    claude.tool_uses = [{"id": "toolu_p", "name": "apply_patch", "input": {"input": patch}}]
    response = await client.responses.create(**sdk_args(examples, CLAUDE))
    call = response.output[0]
    assert (call.type, call.name, call.input, call.call_id) == ("custom_tool_call", "apply_patch", patch, "toolu_p")
    async with client.responses.stream(**sdk_args(examples, CLAUDE)) as stream:
        events = [e async for e in stream]
        final = await stream.get_final_response()
    assert final.output[0].type == "custom_tool_call" and final.output[0].input == patch
    done = [e for e in events if e.type == "response.custom_tool_call_input.done"]
    assert [e.input for e in done] == [patch]
    assert not [e for e in events if e.type == "response.function_call_arguments.delta"]


async def test_namespaced_call_from_gemini_comes_back_with_its_namespace(client, gemini, examples) -> None:
    gemini.function_call = {"name": "mcp__files__read", "args": {"path": "docs/index.md"}}
    response = await client.responses.create(**sdk_args(examples, GEMINI))
    call = next(item for item in response.output if item.type == "function_call")
    assert (call.namespace, call.name, json.loads(call.arguments)) == ("mcp__files", "read", {"path": "docs/index.md"})
    sent = gemini.requests[-1]["body"]
    assert [d["name"] for d in sent["tools"][0]["functionDeclarations"]] == FLAT_NAMES and sent["tools"][1] == {"googleSearch": {}}


@pytest.mark.parametrize("model", [CLAUDE, GEMINI])
async def test_a_tool_type_with_no_equivalent_is_a_400_naming_it(client, claude, gemini, model) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=model, input="find it", tools=[{"type": "file_search", "vector_store_ids": ["vs_1"]}])
    assert "'file_search'" in refused.value.message and refused.value.status_code == 400
    assert claude.requests == [] and gemini.requests == []


async def test_chat_channel_gets_the_functions_and_no_hosted_tool(client, upstream, examples) -> None:
    await client.responses.create(**sdk_args(examples, CHAT))
    sent = upstream.requests[-1]["body"]
    assert [t["function"]["name"] for t in sent["tools"]] == FLAT_NAMES
