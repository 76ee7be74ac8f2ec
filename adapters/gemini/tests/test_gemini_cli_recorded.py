"""The Gemini CLI's own requests, recorded from ``gemini -p -m gemini-2.5-flash`` 0.61.0
(``tests/coding_clis`` drives it live), converted to each other channel's wire:

- ``generate_request_gemini_cli.json``: a one-shot (``say hello to the gateway``);
- ``generate_request_gemini_cli_function_response.json``: the request after its
  ``read_file`` tool ran: the model's ``functionCall`` (with the id the CLI gave it, and
  the thought signature it got) and the CLI's ``functionResponse`` with that id.
"""

from __future__ import annotations

import json

import pytest

from gateway_gemini.request import request_from_wire

ONE_SHOT = "generate_request_gemini_cli.json"
FUNCTION_RESPONSE = "generate_request_gemini_cli_function_response.json"
NOTE = "relaygate-note-7f3a: the answer is forty-two"
CALL_ID = "read_file_1795925448194_0"


def test_the_recordings_are_the_gemini_clis_shape(examples):
    for name in (ONE_SHOT, FUNCTION_RESPONSE):
        body = examples.json(name)
        assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 8192}
        assert body["contents"][0]["parts"][0]["text"].startswith("<session_context>\nThis is the Gemini CLI.")
        assert {"read_file", "list_directory"} <= {f["name"] for t in body["tools"] for f in t["functionDeclarations"]}
    response = examples.json(FUNCTION_RESPONSE)["contents"][-1]["parts"][0]["functionResponse"]
    assert response["id"] == CALL_ID and response["response"] == {"output": NOTE + "\n"}


@pytest.mark.parametrize("name", [ONE_SHOT, FUNCTION_RESPONSE])
def test_gemini_cli_to_anthropic(examples, name):
    to_wire = pytest.importorskip("gateway_anthropic.messages_request").request_to_wire
    body = to_wire(request_from_wire(examples.json(name), "gemini-2.5-flash", stream=True), "claude-sonnet-4-6")
    assert json.dumps(body["system"]).startswith('"You are a non-interactive CLI agent') or body["system"][0]["text"].startswith("You are a non-interactive CLI agent")
    first = body["messages"][0]
    assert first["role"] == "user" and first["content"][-1] == {"type": "text", "text": "say hello to the gateway" if name == ONE_SHOT else "read note.txt, please"}
    assert {"read_file", "list_directory"} <= {t["name"] for t in body["tools"]} and body["stream"] is True
    assert body["thinking"]["type"] == "enabled" and body["thinking"]["budget_tokens"] < body["max_tokens"]
    assert "temperature" not in body or "top_p" not in body  # newer Claude models refuse both
    if name == FUNCTION_RESPONSE:
        call, result = body["messages"][1], body["messages"][2]
        assert call == {"role": "assistant", "content": [{"type": "tool_use", "id": CALL_ID, "name": "read_file", "input": {"file_path": "/home/user/project/note.txt"}}]}
        assert result["role"] == "user" and result["content"][0]["type"] == "tool_result" and result["content"][0]["tool_use_id"] == CALL_ID
        assert NOTE in json.dumps(result["content"][0]["content"]) and len(body["messages"]) == 3
    else:
        assert len(body["messages"]) == 1


@pytest.mark.parametrize("name", [ONE_SHOT, FUNCTION_RESPONSE])
def test_gemini_cli_to_openai_chat(examples, name):
    to_wire = pytest.importorskip("gateway_openai.chat_request").request_to_wire
    body = to_wire(request_from_wire(examples.json(name), "gemini-2.5-flash", stream=True), "gpt-4o")
    messages = body["messages"]
    assert messages[0]["role"] == "system" and messages[0]["content"].startswith("You are a non-interactive CLI agent")
    assert messages[1]["role"] == "user" and messages[1]["content"][-1] == {"type": "text", "text": "say hello to the gateway" if name == ONE_SHOT else "read note.txt, please"}
    assert {"read_file", "list_directory"} <= {t["function"]["name"] for t in body["tools"]}
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    if name == FUNCTION_RESPONSE:
        call, result = messages[2], messages[3]
        assert call["role"] == "assistant" and call["tool_calls"] == [{"id": CALL_ID, "type": "function", "function": {"name": "read_file", "arguments": '{"file_path":"/home/user/project/note.txt"}'}}]
        assert result == {"role": "tool", "tool_call_id": CALL_ID, "content": NOTE + "\n"} and len(messages) == 4
    else:
        assert len(messages) == 2
