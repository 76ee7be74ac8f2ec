"""Messages answers: wire → core → wire, usage and stop reasons, conversions to and from OpenAI."""

from __future__ import annotations


import pytest
from anthropic.types import Message as SDKMessage

from gateway_core.errors import UpstreamError
from gateway_core.model import ChatResponse, ReasoningPart, StopReason, TextPart, ToolCallPart, Usage
from gateway_core.testing import Examples
from gateway_anthropic.messages_response import (
    response_from_wire,
    response_to_wire,
    stop_reason_from_wire,
    stop_reason_to_wire,
    usage_from_wire,
    usage_to_wire,
)

RESPONSES = Examples.beside(__file__).names("messages_response_*.json")


@pytest.mark.parametrize("name", RESPONSES)
def test_round_trip(examples, name: str) -> None:
    body = examples.json(name)
    again = response_to_wire(response_from_wire(body), body["model"])
    SDKMessage.model_validate(again)
    expected = {**body, "usage": {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, **body["usage"]}}
    expected["usage"].pop("service_tier", None)  # usage details the core does not keep
    assert again == expected


def test_usage_counts_every_input_token_in_the_core() -> None:
    usage = usage_from_wire({"input_tokens": 2095, "output_tokens": 503, "cache_creation_input_tokens": 2051, "cache_read_input_tokens": 1024})
    assert usage == Usage(input_tokens=2095 + 2051 + 1024, output_tokens=503, cached_input_tokens=1024, cache_write_tokens=2051)
    assert usage.uncached_input_tokens == 2095
    assert usage_to_wire(usage) == {"input_tokens": 2095, "output_tokens": 503, "cache_creation_input_tokens": 2051, "cache_read_input_tokens": 1024}
    assert usage_from_wire(None) is None
    assert usage_from_wire({"input_tokens": None}) == Usage()  # absent counts are 0
    assert usage_from_wire({"input_tokens": 3, "output_tokens": True}) is None  # a count that is no count: estimated


@pytest.mark.parametrize(
    ("wire", "core"),
    [
        ("end_turn", StopReason.END_TURN),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("model_context_window_exceeded", StopReason.MAX_TOKENS),
        ("stop_sequence", StopReason.STOP_SEQUENCE),
        ("tool_use", StopReason.TOOL_USE),
        ("refusal", StopReason.CONTENT_FILTER),
        ("pause_turn", StopReason.END_TURN),
        ("something_new", StopReason.END_TURN),
        (None, None),
    ],
)
def test_stop_reasons(wire, core) -> None:
    assert stop_reason_from_wire(wire) is core


def test_tool_calls_are_written_as_tool_use_whatever_the_core_says() -> None:
    assert stop_reason_to_wire(StopReason.END_TURN, tool_calls=True) == "tool_use"
    assert stop_reason_to_wire(StopReason.MAX_TOKENS, tool_calls=True) == "max_tokens"
    assert stop_reason_to_wire(StopReason.ERROR) == "end_turn"
    assert stop_reason_to_wire(StopReason.CONTENT_FILTER) == "refusal"


def test_core_shape(examples) -> None:
    tools = response_from_wire(examples.json("messages_response_tool_use.json"))
    assert tools.stop_reason is StopReason.TOOL_USE
    assert tools.parts[1] == ToolCallPart("toolu_01A09q90qw90lq917835lq9", "get_weather", '{"location":"San Francisco, CA","unit":"celsius"}')
    thinking = response_from_wire(examples.json("messages_response_thinking.json"))
    assert isinstance(thinking.parts[0], ReasoningPart) and thinking.parts[0].provider_metadata["anthropic_signature"].startswith("zbbJ")
    assert thinking.provider_metadata == {"anthropic_message": {"stop_sequence": "END"}}


def test_a_body_that_is_not_a_message_is_an_upstream_error(examples) -> None:
    with pytest.raises(UpstreamError) as caught:
        response_from_wire(examples.json("error_overloaded.json"))
    assert "not a message" in caught.value.message and caught.value.retryable
    with pytest.raises(UpstreamError):
        response_from_wire([1, 2])


def test_openai_answers_as_anthropic_messages(openai_examples) -> None:
    chat_response = pytest.importorskip("gateway_openai.chat_response")
    for name in openai_examples.names("chat_response_*.json"):
        response = chat_response.response_from_wire(openai_examples.json(name))
        message = SDKMessage.model_validate(response_to_wire(response, "claude-client-name"))
        assert message.model == "claude-client-name" and message.id.startswith("msg_")
    calls = response_to_wire(chat_response.response_from_wire(openai_examples.json("chat_response_tool_calls.json")), "c")
    assert calls["stop_reason"] == "tool_use"
    assert [(b["id"], b["input"]) for b in calls["content"]] == [
        ("call_Vb6Qm0D3kT2pXh7uYd1Ls9aZ", {"location": "Paris, France", "unit": "celsius"}),
        ("call_R2nW8cJ5eK4gF1tP0oXy7Hqb", {"location": "Tokyo, Japan", "unit": "celsius"}),
    ]
    assert calls["usage"] == {"input_tokens": 118, "output_tokens": 58, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    reasoning = response_to_wire(chat_response.response_from_wire(openai_examples.json("chat_response_reasoning_cached.json")), "c")
    assert reasoning["content"][0]["type"] == "thinking" and reasoning["content"][0]["signature"] == ""
    cached = chat_response.usage_from_wire(openai_examples.json("chat_response_reasoning_cached.json")["usage"])
    assert reasoning["usage"]["input_tokens"] + reasoning["usage"]["cache_read_input_tokens"] == cached.input_tokens


def test_anthropic_answers_as_openai_completions(examples) -> None:
    chat_response = pytest.importorskip("gateway_openai.chat_response")
    body = chat_response.response_to_wire(response_from_wire(examples.json("messages_response_tool_use.json")), "gpt-client")
    message = body["choices"][0]["message"]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert message["content"] == "I'll check the current weather in San Francisco for you."
    assert [c["id"] for c in message["tool_calls"]] == ["toolu_01A09q90qw90lq917835lq9", "toolu_01B18r81rx81mr826724mr8"]
    text = chat_response.response_to_wire(response_from_wire(examples.json("messages_response_text.json")), "gpt-client")
    assert text["usage"]["prompt_tokens"] == 2095 + 2051 + 1024
    assert text["usage"]["prompt_tokens_details"] == {"cached_tokens": 1024, "cache_write_tokens": 2051}
    stop = chat_response.response_to_wire(response_from_wire(examples.json("messages_response_thinking.json")), "gpt-client")
    assert stop["choices"][0]["finish_reason"] == "stop"
    assert stop["choices"][0]["message"]["reasoning_content"].startswith("To approach this")


def test_an_empty_answer_is_still_a_valid_message() -> None:
    response = ChatResponse(id="", model="m", parts=(TextPart(""),), stop_reason=None)
    body = response_to_wire(response, "m")
    SDKMessage.model_validate(body)
    assert body["content"] == [] and body["stop_reason"] == "end_turn"
