"""chat.completion objects: wire → core → wire, usage, finish reasons."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from gateway_core.errors import UpstreamError
from gateway_core.model import (
    ChatResponse,
    ImagePart,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
    Usage,
)
from gateway_core.testing import Examples
from gateway_openai.chat_response import (
    finish_reason_to_wire,
    response_from_wire,
    response_to_wire,
    stop_reason_from_wire,
    usage_from_wire,
    usage_to_wire,
)

RESPONSES = Examples.beside(__file__).names("chat_response_*.json")


def normalized_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """A usage object reduced to the details the core keeps."""
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    return {
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "total_tokens": usage["total_tokens"],
        "prompt_tokens_details": {"cached_tokens": prompt.get("cached_tokens", 0)},
        "completion_tokens_details": {"reasoning_tokens": completion.get("reasoning_tokens", 0)},
    }


@pytest.mark.parametrize("name", RESPONSES)
def test_round_trip(examples, name: str) -> None:
    body = examples.json(name)
    out = response_to_wire(response_from_wire(body), body["model"])
    expected = copy.deepcopy(body)
    expected["usage"] = normalized_usage(body["usage"])
    expected["choices"][0]["message"].setdefault("refusal", None)  # OpenAI always sends it
    assert out == expected
    ChatCompletion.model_validate(out)


def test_text(examples) -> None:
    response = response_from_wire(examples.json("chat_response_text.json"))
    assert response.parts == (TextPart("This is a test!"),)
    assert response.stop_reason is StopReason.END_TURN
    assert response.usage == Usage(input_tokens=13, output_tokens=5)
    assert response.created == 1754472331 and response.model == "gpt-4o-mini-2024-07-18"
    assert response.provider_metadata == {
        "openai_response": {"service_tier": "default", "system_fingerprint": "fp_560af6e559"},
        "openai_choice": {"logprobs": None},
        "openai_message": {"annotations": []},
    }


def test_tool_calls(examples) -> None:
    response = response_from_wire(examples.json("chat_response_tool_calls.json"))
    assert [type(p) for p in response.parts] == [ToolCallPart, ToolCallPart]
    assert response.parts[1] == ToolCallPart(
        "call_R2nW8cJ5eK4gF1tP0oXy7Hqb", "get_weather", '{"location":"Tokyo, Japan","unit":"celsius"}'
    )
    assert response.stop_reason is StopReason.TOOL_USE


def test_reasoning_and_cached_usage(examples) -> None:
    response = response_from_wire(examples.json("chat_response_reasoning_cached.json"))
    assert isinstance(response.parts[0], ReasoningPart) and response.parts[0].text.startswith("Compare 9.11")
    assert response.parts[1] == TextPart("9.11 is smaller than 9.8.")
    assert response.usage == Usage(input_tokens=1542, output_tokens=187, cached_input_tokens=1536, reasoning_tokens=151)


def test_foreign_response_is_a_valid_completion() -> None:
    """A response another channel produced: reasoning with a signature, text in two
    parts, an image the wire cannot carry, tool use reported as END_TURN, cache writes."""
    response = ChatResponse(
        id="msg_01",
        model="claude-x",
        parts=(
            ReasoningPart("Let me think.", {"signature": "abc"}),
            TextPart("Hello "),
            TextPart("world."),
            ImagePart(data="AAAA", media_type="image/png"),
            ToolCallPart("toolu_1", "lookup", '{"q": "x"}'),
        ),
        stop_reason=StopReason.END_TURN,
        usage=Usage(input_tokens=100, output_tokens=20, cached_input_tokens=40, cache_write_tokens=10, reasoning_tokens=5),
        created=1754470000,
        provider_metadata={"anthropic": {"container": None}},
    )
    out = response_to_wire(response, "my-model")
    assert out == {
        "id": "msg_01",
        "object": "chat.completion",
        "created": 1754470000,
        "model": "my-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Hello world.",
                    "refusal": None,
                    "reasoning_content": "Let me think.",
                    "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "total_tokens": 120,
            "prompt_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 10},
            "completion_tokens_details": {"reasoning_tokens": 5},
        },
    }
    completion = ChatCompletion.model_validate(out)
    assert completion.choices[0].message.tool_calls[0].function.name == "lookup"
    assert completion.usage.prompt_tokens_details.cached_tokens == 40


def test_empty_answer_and_no_usage() -> None:
    out = response_to_wire(ChatResponse(id="x", model="m", parts=(), stop_reason=None), "m")
    assert out["choices"][0]["message"]["content"] == "" and out["choices"][0]["finish_reason"] == "stop"
    assert "usage" not in out and isinstance(out["created"], int)
    ChatCompletion.model_validate(out)


def test_refusal_round_trip() -> None:
    body = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                     "logprobs": None, "finish_reason": "stop"}],
    }
    response = response_from_wire(body)
    assert response.parts == (TextPart("I can't help with that.", {"openai_refusal": True}),)
    assert response_to_wire(response, "gpt-4o") == body


def test_lenient_reading_of_compatible_servers() -> None:
    body = {
        "id": "gen-1", "model": "x", "created": 5,
        "choices": [{"message": {"role": "assistant", "reasoning": "hmm", "content": [{"type": "text", "text": "hi"}],
                                 "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                     "finish_reason": "eos"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "prompt_cache_hit_tokens": 2},
    }
    response = response_from_wire(body)
    assert response.parts == (ReasoningPart("hmm"), TextPart("hi"), ToolCallPart("call_gen-1_0", "f", "{}"))
    assert response.stop_reason is StopReason.END_TURN
    assert response.usage == Usage(input_tokens=3, output_tokens=4, cached_input_tokens=2)


@pytest.mark.parametrize("body", [[], "x", {"error": {"message": "overloaded"}}, {"id": "x", "choices": "no"}])
def test_not_a_completion(body: Any) -> None:
    with pytest.raises(UpstreamError) as info:
        response_from_wire(body)
    assert info.value.upstream_body
    if isinstance(body, dict) and "error" in body:
        assert "overloaded" in info.value.message


def test_finish_reasons() -> None:
    assert stop_reason_from_wire("stop") is StopReason.END_TURN
    assert stop_reason_from_wire("length") is StopReason.MAX_TOKENS
    assert stop_reason_from_wire("tool_calls") is StopReason.TOOL_USE
    assert stop_reason_from_wire("function_call") is StopReason.TOOL_USE
    assert stop_reason_from_wire("content_filter") is StopReason.CONTENT_FILTER
    assert stop_reason_from_wire(None) is None
    assert finish_reason_to_wire(StopReason.STOP_SEQUENCE) == "stop"
    assert finish_reason_to_wire(StopReason.MAX_TOKENS, tool_calls=True) == "length"
    assert finish_reason_to_wire(StopReason.END_TURN, tool_calls=True) == "tool_calls"
    assert finish_reason_to_wire(StopReason.ERROR) == "stop"
    assert finish_reason_to_wire(None) == "stop"


def test_usage() -> None:
    assert usage_from_wire(None) is None
    assert usage_from_wire({"prompt_tokens": 1, "completion_tokens": 2, "prompt_tokens_details": None}) == Usage(1, 2)
    usage = Usage(input_tokens=10, output_tokens=3, cached_input_tokens=4, reasoning_tokens=1)
    assert usage_from_wire(usage_to_wire(usage)) == usage
