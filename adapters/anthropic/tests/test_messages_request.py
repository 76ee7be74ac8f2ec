"""Messages requests: wire → core → wire, the core shape, conversions to and from OpenAI, bad bodies."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pydantic
import pytest
from anthropic.types import message_create_params

from gateway_core.errors import InvalidRequestError
from gateway_core.model import (
    ChatRequest,
    ImagePart,
    Message,
    ReasoningPart,
    Role,
    TextPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolChoiceMode,
    ToolResultPart,
)
from gateway_core.testing import Examples
from gateway_anthropic.messages_request import request_from_wire, request_to_wire

REQUESTS = Examples.beside(__file__).names("messages_request_*.json")
SDK_PARAMS = pydantic.TypeAdapter(message_create_params.MessageCreateParamsNonStreaming)


def compact(content: Any) -> Any:
    if isinstance(content, list) and len(content) == 1 and set(content[0]) == {"type", "text"}:
        return content[0]["text"]
    return content


def blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def normalized(body: dict[str, Any]) -> dict[str, Any]:
    """The original body with the round-trip normalizations messages_request documents."""
    out = {k: v for k, v in copy.deepcopy(body).items() if v is not None and not (k == "stream" and v is False)}
    system = out.get("system")
    system = [{"type": "text", "text": system}] if isinstance(system, str) else list(system or [])
    messages = []
    for message in out["messages"]:
        if message["role"] == "system":  # moved to the top-level system
            content = message["content"]
            system.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
            continue
        if isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    if block.get("is_error") is False:
                        del block["is_error"]
                    if "content" in block:
                        block["content"] = compact(block["content"])
                        if not block["content"]:
                            del block["content"]
        if messages and messages[-1]["role"] == message["role"]:  # the turns a moved system message had split
            merged = [blocks(messages[-1]["content"]), blocks(message["content"])]
            messages[-1] = {**message, "content": compact(merged[0] + merged[1])}
            continue
        messages.append({**message, "content": compact(message["content"])})
    out["messages"] = messages
    if system:
        out["system"] = compact(system)
    return out


@pytest.mark.parametrize("name", REQUESTS)
def test_round_trip(examples, name: str) -> None:
    body = examples.json(name)
    request = request_from_wire(body)
    assert request_to_wire(request, body["model"], all_extra=True) == normalized(body)


@pytest.mark.parametrize("name", REQUESTS)
def test_examples_are_valid_sdk_params(examples, name: str) -> None:
    SDK_PARAMS.validate_python({**examples.json(name), "stream": False})


def test_core_shape_of_tools_and_parallel_calls(examples) -> None:
    request = request_from_wire(examples.json("messages_request_tools.json"))
    assert request.system == (TextPart("You can look up the weather."),)
    assert [m.role for m in request.messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    calls = request.messages[1].parts
    assert calls[0] == TextPart("I'll check both.")
    assert calls[1] == ToolCallPart("toolu_01A09q90qw90lq917835lq9", "get_weather", '{"location":"San Francisco, CA","unit":"celsius"}')
    assert calls[2].id == "toolu_01B18r81rx81mr826724mr8"
    results = request.messages[2].parts
    assert results[0] == ToolResultPart("toolu_01A09q90qw90lq917835lq9", (TextPart("15 degrees"),))
    assert results[1] == ToolResultPart("toolu_01B18r81rx81mr826724mr8", (TextPart("time service unavailable"),), is_error=True)
    assert request.tool_choice == ToolChoice(ToolChoiceMode.AUTO)
    assert request.parallel_tool_calls is True
    assert request.tools[0].parameters["required"] == ["location"]
    assert request.tools[1].extra == {"cache_control": {"type": "ephemeral"}}


def test_core_shape_of_sampling_and_metadata(examples) -> None:
    request = request_from_wire(examples.json("messages_request_multi_turn.json"))
    assert (request.max_tokens, request.temperature, request.top_p, request.top_k) == (512, 0.5, 0.9, 40)
    assert request.stop == ("\n\nHuman:", "END")
    assert request.user == "13803d75-b4b5-4c3e-b2a2-6f21399b021b"
    assert request.stream is True and request.extra == {}
    assert request.system[1] == TextPart("Answer in English.", {"anthropic_extra": {"cache_control": {"type": "ephemeral"}}})


def test_core_shape_of_thinking_and_images(examples) -> None:
    request = request_from_wire(examples.json("messages_request_thinking.json"))
    thinking, redacted, call = request.messages[1].parts
    assert thinking == ReasoningPart(
        "The user wants the weather in Paris. I should call get_weather.",
        {"anthropic_signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
    )
    assert redacted.text == "" and redacted.provider_metadata["anthropic_redacted"].startswith("EmwK")
    assert isinstance(call, ToolCallPart) and request.extra == {"thinking": {"type": "enabled", "budget_tokens": 10000}}
    images = request_from_wire(examples.json("messages_request_images.json")).messages[0].parts
    assert images[0] == ImagePart(data=images[0].data, media_type="image/png")
    assert images[1] == ImagePart(url="https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg")


def test_claude_code_request_keeps_what_it_cannot_interpret(examples) -> None:
    request = request_from_wire(examples.json("messages_request_claude_code.json"))
    assert request.messages[0] == Message(Role.SYSTEM, (TextPart("The working directory is /home/user/project."),))
    assert request.messages[1].parts[1].provider_metadata["anthropic_block"]["type"] == "document"
    assert set(request.extra) == {"thinking", "output_config", "context_management", "anthropic_server_tools"}
    assert request.user == "user_2f3e_account_9c1d_session_77aa"
    assert [tool.name for tool in request.tools] == ["Bash"]  # Anthropic runs its server tools itself
    assert request.extra["anthropic_server_tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]


def test_a_request_from_another_protocol_gets_max_tokens_and_drops_foreign_extras() -> None:
    request = ChatRequest(
        model="gpt-4o",
        messages=(Message(Role.USER, (TextPart("hi"),)),),
        user="u-1",
        extra={"seed": 7, "metadata": {"tag": "x"}, "thinking": {"type": "enabled", "budget_tokens": 2048}},
    )
    body = request_to_wire(request, "claude-x", default_max_tokens=777)
    assert body == {
        "model": "claude-x",
        "max_tokens": 777,
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": {"user_id": "u-1"},
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }


def test_tool_messages_become_user_turns_with_results_first() -> None:
    request = ChatRequest(
        model="m",
        messages=(
            Message(Role.USER, (TextPart("weather?"),)),
            Message(Role.ASSISTANT, (ReasoningPart("unsigned thoughts"), ToolCallPart("call_1", "get_weather", '{"city": "Paris"}'), ToolCallPart("call_2", "get_weather", "not json"))),
            Message(Role.TOOL, (ToolResultPart("call_1", (TextPart("18 C"),)),)),
            Message(Role.TOOL, (ToolResultPart("call_2", (TextPart("24 C"), ImagePart(url="data:image/png;base64,AAAA")), is_error=True),)),
            Message(Role.USER, (TextPart("thanks"),)),
            Message(Role.SYSTEM, (TextPart("be brief"),)),
        ),
        system=(TextPart("sys"),),
        tools=(Tool("get_weather", "Weather", {"type": "object"}, {"strict": True}), Tool("grammar", extra={"openai_tool": {"type": "custom"}})),
        tool_choice=ToolChoice(ToolChoiceMode.REQUIRED),
        parallel_tool_calls=False,
    )
    body = request_to_wire(request, "claude-x")
    assert body["system"] == [{"type": "text", "text": "sys"}, {"type": "text", "text": "be brief"}]
    assert body["messages"] == [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"arguments": "not json"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "18 C"},
            {"type": "tool_result", "tool_use_id": "call_2", "is_error": True, "content": [
                {"type": "text", "text": "24 C"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            ]},
            {"type": "text", "text": "thanks"},
        ]},
    ]
    assert body["tools"] == [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}, "strict": True}]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    SDK_PARAMS.validate_python(body)


def test_openai_requests_convert_to_valid_anthropic_bodies(openai_examples) -> None:
    chat_request = pytest.importorskip("gateway_openai.chat_request")
    for name in openai_examples.names("chat_request_*.json"):
        request = chat_request.request_from_wire(openai_examples.json(name))
        body = request_to_wire(request, "claude-x", default_max_tokens=4096)
        SDK_PARAMS.validate_python({**body, "stream": False})
        assert body["messages"], name
    tools = request_to_wire(chat_request.request_from_wire(openai_examples.json("chat_request_tools.json")), "claude-x")
    assert tools["system"] == "You are a weather assistant. Use the tools to answer."
    assert [m["role"] for m in tools["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["id"] for b in tools["messages"][1]["content"]] == ["call_Vb6Qm0D3kT2pXh7uYd1Ls9aZ", "call_R2nW8cJ5eK4gF1tP0oXy7Hqb"]
    results = tools["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["call_Vb6Qm0D3kT2pXh7uYd1Ls9aZ", "call_R2nW8cJ5eK4gF1tP0oXy7Hqb"]
    assert tools["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": False}
    assert tools["max_tokens"] == 1024
    images = request_to_wire(chat_request.request_from_wire(openai_examples.json("chat_request_images.json")), "claude-x")
    sources = [b["source"] for b in images["messages"][0]["content"] if b["type"] == "image"]
    assert [s["type"] for s in sources] == ["url", "base64", "base64"]
    assert sources[2]["media_type"] == "image/jpeg" and images["stream"] is True


def test_anthropic_requests_convert_to_openai_bodies(examples) -> None:
    chat_request = pytest.importorskip("gateway_openai.chat_request")
    body = chat_request.request_to_wire(request_from_wire(examples.json("messages_request_tools.json")), "gpt-4o")
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["toolu_01A09q90qw90lq917835lq9", "toolu_01B18r81rx81mr826724mr8"]
    assert orjson.loads(messages[2]["tool_calls"][0]["function"]["arguments"]) == {"location": "San Francisco, CA", "unit": "celsius"}
    assert [m["tool_call_id"] for m in messages[3:5]] == ["toolu_01A09q90qw90lq917835lq9", "toolu_01B18r81rx81mr826724mr8"]
    assert body["parallel_tool_calls"] is True and body["tools"][0]["function"]["name"] == "get_weather"
    sampled = chat_request.request_to_wire(request_from_wire(examples.json("messages_request_multi_turn.json")), "gpt-4o")
    assert (sampled["temperature"], sampled["top_p"], sampled["stop"], sampled["user"]) == (0.5, 0.9, ["\n\nHuman:", "END"], "13803d75-b4b5-4c3e-b2a2-6f21399b021b")
    assert "top_k" not in sampled and "metadata" not in sampled
    claude_code = chat_request.request_to_wire(request_from_wire(examples.json("messages_request_claude_code.json")), "gpt-4o")
    assert not {"thinking", "output_config", "context_management"} & set(claude_code)


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"messages": [{"role": "user", "content": "x"}]},
        {"model": "m", "messages": []},
        {"model": "m", "messages": [{"role": "robot", "content": "x"}]},
        {"model": "m", "messages": [{"role": "user"}]},
        {"model": "m", "messages": [{"role": "user", "content": 5}]},
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]},
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_use", "name": "x"}]}]},
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": "many"},
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "tool"}},
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "stop_sequences": "END"},
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": True},
    ],
)
def test_malformed_bodies_are_invalid_requests(body: Any) -> None:
    with pytest.raises(InvalidRequestError):
        request_from_wire(body)
