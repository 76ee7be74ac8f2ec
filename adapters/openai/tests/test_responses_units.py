"""The Responses translations, as pure functions: request items → core request,
core events → Responses events (and back), answers → response objects."""

from __future__ import annotations

import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from gateway_core import ChannelRecord, InvalidRequestError
from gateway_core.model import (
    ChatResponse,
    ImagePart,
    PartDelta,
    PartStart,
    PartStop,
    ReasoningPart,
    Role,
    StopReason,
    StreamFinish,
    StreamStart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    UsageReport,
)
from gateway_openai.channel_responses import speaks_responses
from gateway_openai.fake_responses import events as fake_events
from gateway_openai.responses_request import request_from_wire, stateful_reason, unconvertible
from gateway_openai.responses_response import ResponseShell, encode_reasoning, response_to_wire
from gateway_openai.responses_stream import ResponsesDecoder, ResponsesEncoder

EVENTS = TypeAdapter(ResponseStreamEvent)
assert openai  # the SDK's types are the reference for every shape checked here


def test_string_input_and_instructions():
    request = request_from_wire({"model": "m", "input": "hi", "instructions": "Be kind.", "max_output_tokens": 50, "stream": True})
    assert request.system == (TextPart("Be kind."),)
    assert [(m.role, m.parts) for m in request.messages] == [(Role.USER, (TextPart("hi"),))]
    assert (request.max_tokens, request.stream) == (50, True)


def test_items_become_messages_with_calls_results_and_system_parts():
    body = {
        "model": "m",
        "input": [
            {"type": "message", "role": "developer", "id": "msg_0", "content": [{"type": "input_text", "text": "rules"}]},
            {"role": "user", "content": [{"type": "input_text", "text": "look"},
                                         {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hmm"}],
             "encrypted_content": encode_reasoning({"anthropic_signature": "sig"})},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "calling"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{\"a\":1}"},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "two"}]},
            {"role": "system", "content": "late system note"},
            {"type": "item_reference", "id": "msg_old"},
            {"type": "local_shell_call", "id": "ls_1"},
        ],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}, {"type": "web_search"}],
        "tool_choice": {"type": "function", "name": "f"},
        "reasoning": {"effort": "high", "summary": "auto"},
        "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}, "strict": True}, "verbosity": "low"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }  # fmt: skip
    request = request_from_wire(body)
    assert request.system == (TextPart("rules", {"openai_role": "developer"}),)
    user, assistant, tool, system = request.messages
    assert user.parts == (TextPart("look"), ImagePart(data="AAAA", media_type="image/png"))
    assert assistant.role is Role.ASSISTANT and assistant.parts == (
        ReasoningPart("hmm", {"anthropic_signature": "sig"}), TextPart("calling"), ToolCallPart("c1", "f", "{}"), ToolCallPart("c2", "g", '{"a":1}'))
    assert tool.role is Role.TOOL and tool.parts == (ToolResultPart("c1", (TextPart("one"),)), ToolResultPart("c2", (TextPart("two"),)))
    assert system.role is Role.SYSTEM and system.parts == (TextPart("late system note"),)
    assert [t.name for t in request.tools] == ["f", "web_search"] and request.tools[0].extra == {"strict": True}
    assert request.tools[1].extra == {"hosted_tool": "web_search", "options": {}}
    assert request.tool_choice.name == "f"
    assert request.extra["reasoning_effort"] == "high" and request.extra["verbosity"] == "low"
    assert request.extra["response_format"] == {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": True}}
    assert request.extra["store"] is False and request.extra["include"] == ["reasoning.encrypted_content"]
    assert stateful_reason(body) == "item_reference"
    assert unconvertible(body) == ["item:item_reference", "item:local_shell_call", "tool:web_search"]


@pytest.mark.parametrize("field,value", [("previous_response_id", "resp_1"), ("conversation", "conv_1"), ("prompt", {"id": "pmpt_1"}), ("background", True)])
def test_state_kept_upstream_is_recognised(field, value):
    assert stateful_reason({"model": "m", "input": "x", field: value}) == field
    assert stateful_reason({"model": "m", "input": "x"}) is None


@pytest.mark.parametrize("body,param", [
    ({"model": "m", "input": 5}, "input"),
    ({"model": "m", "input": ["x"]}, "input[0]"),
    ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    ({"model": "m", "input": [{"type": "function_call", "name": "f"}]}, "input[0].call_id"),
    ({"model": "m", "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
    ({"model": "m", "input": "x", "tool_choice": "sometimes"}, "tool_choice"),
])  # fmt: skip
def test_bad_requests_name_the_offending_field(body, param):
    with pytest.raises(InvalidRequestError) as caught:
        request_from_wire(body)
    assert caught.value.param == param


def _encode(events, usage=None):
    encoder = ResponsesEncoder(ResponseShell({"model": "m", "tools": []}, "m"))
    out = [e for event in events for e in encoder.encode(event)]
    return out + encoder.finish()


def test_encoded_stream_is_valid_for_the_sdk_and_closes_every_item():
    events = [
        StreamStart("msg_1", "up"),
        PartStart(0, ReasoningPart("")), PartDelta(0, "think"), PartStop(0, {"anthropic_signature": "s"}),
        PartStart(1, TextPart("")), PartDelta(1, "Hello"), PartDelta(1, " you"), PartStop(1),
        PartStart(2, ToolCallPart("call_1", "f")), PartDelta(2, '{"a":'), PartDelta(2, "1}"),  # never stopped
        StreamFinish(StopReason.TOOL_USE), UsageReport(Usage(10, 5, cached_input_tokens=4, reasoning_tokens=2)),
    ]  # fmt: skip
    out = _encode(events)
    parsed = [EVENTS.validate_python(payload) for _, payload in out]
    kinds = [e.type for e in parsed]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in parsed] == list(range(len(parsed)))
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done") == 3
    final = parsed[-1].response
    assert [i.type for i in final.output] == ["reasoning", "message", "function_call"]
    assert final.output[1].content[0].text == "Hello you" and final.output[2].arguments == '{"a":1}'
    assert final.output[0].encrypted_content == encode_reasoning({"anthropic_signature": "s"})
    assert (final.usage.input_tokens_details.cached_tokens, final.usage.output_tokens_details.reasoning_tokens) == (4, 2)


def test_max_tokens_stop_is_an_incomplete_response():
    out = _encode([PartStart(0, TextPart("")), PartDelta(0, "cut"), StreamFinish(StopReason.MAX_TOKENS)])
    name, payload = out[-1]
    assert name == "response.incomplete" and payload["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_failure_events():
    encoder = ResponsesEncoder(ResponseShell({"model": "m"}, "m"))
    encoder.encode(PartStart(0, TextPart("x")))
    error, failed = encoder.fail("upstream dropped", "upstream_error")
    assert error[1]["message"] == "upstream dropped" and failed[0] == "response.failed"
    assert EVENTS.validate_python(failed[1]).response.error.message == "upstream dropped"


def test_response_object_is_valid_for_the_sdk():
    answer = ChatResponse("x", "up", (TextPart("hi"), ToolCallPart("c", "f", "{}")), StopReason.TOOL_USE, Usage(3, 2))
    body = response_to_wire(answer, {"model": "m", "tools": [{"type": "function", "name": "f"}], "instructions": "i"}, "m")
    response = Response.model_validate(body)
    assert response.output_text == "hi" and response.output[1].call_id == "c" and response.instructions == "i"
    assert response.status == "completed" and response.usage.total_tokens == 5


def test_decoder_reads_a_responses_stream():
    tool = {"id": "c1", "function": {"name": "f", "arguments": '{"x": 1}'}}
    decoder = ResponsesDecoder()
    events = [e for payload in fake_events({"model": "m", "input": "a b"}, tool) for e in decoder.feed(payload)]
    assert isinstance(events[0], StreamStart) and events[1] == PartStart(0, ToolCallPart("c1", "f"))
    assert "".join(e.text for e in events if isinstance(e, PartDelta)) == '{"x": 1}'
    assert events[-2] == StreamFinish(StopReason.TOOL_USE) and isinstance(events[-1], UsageReport)
    assert events[-1].usage.cached_input_tokens == 2


@pytest.mark.parametrize("base_url,endpoints,settings,native", [
    ("https://api.openai.com", (), {}, True),
    ("http://vllm:8000", (), {}, False),
    ("http://vllm:8000", ("chat", "responses"), {}, True),
    ("https://api.openai.com", ("chat", "embeddings"), {}, False),
    ("http://vllm:8000", ("chat",), {"responses": True}, True),
    ("https://api.openai.com", (), {"responses": False}, False),
    ("http://vllm:8000", (), {"responses": "true"}, True),  # stored as text before settings were validated
    ("https://api.openai.com", (), {"responses": "off"}, False),
    ("https://api.openai.com", (), {"responses": "perhaps"}, True),  # unreadable: not set
])  # fmt: skip
def test_which_channels_speak_responses(base_url, endpoints, settings, native):
    channel = ChannelRecord(1, "c", "openai", base_url, ("k",), ("m",), {}, ("default",), endpoints=endpoints, settings=settings)
    assert speaks_responses(channel) is native
