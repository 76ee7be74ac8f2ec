"""Claude Code's own requests, recorded from ``claude -p`` 2.1.197 (``tests/coding_clis``
drives it live), converted to each other channel's wire. Recorded on a model name that
is not Claude's, so its agent list comes as a system message after the user's turn:

- ``messages_request_claude_code_cli.json``: a one-shot (``say hello to the gateway``);
- ``messages_request_claude_code_cli_tool_result.json``: the request after its ``Read``
  tool ran (the file's lines in a ``tool_result``), the system message between the
  user's turn and the assistant's ``tool_use``.
"""

from __future__ import annotations

import json

import pytest

from gateway_anthropic.messages_request import request_from_wire

ONE_SHOT = "messages_request_claude_code_cli.json"
TOOL_RESULT = "messages_request_claude_code_cli_tool_result.json"
AGENTS = "Available agent types for the Agent tool:"
NOTE = "relaygate-note-7f3a: the answer is forty-two"


def test_the_recordings_are_claude_codes_shape(examples):
    for name in (ONE_SHOT, TOOL_RESULT):
        body = examples.json(name)
        assert body["stream"] is True and body["system"][0]["text"].startswith("x-anthropic-billing-header: cc_version=2.1.197")
        assert [m["role"] for m in body["messages"]][:2] == ["user", "system"] and body["messages"][1]["content"].startswith(AGENTS)
        assert {"Read", "Bash", "Agent"} <= {t["name"] for t in body["tools"]}


@pytest.mark.parametrize("name", [ONE_SHOT, TOOL_RESULT])
def test_claude_code_to_gemini_keeps_system_content_in_the_system_instruction(examples, name):
    to_wire = pytest.importorskip("gateway_gemini.request").request_to_wire
    body = to_wire(request_from_wire(examples.json(name)), signature_placeholder="skip_thought_signature_validator", model="gemini-2.5-flash")
    system = [part["text"] for part in body["systemInstruction"]["parts"]]
    # the top-level system blocks in order, then the mid-conversation system message
    assert system[0].startswith("x-anthropic-billing-header") and system[1].startswith("You are a Claude agent") and system[-1].startswith(AGENTS)
    assert AGENTS not in json.dumps(body["contents"]) and "<system>" not in json.dumps(body["contents"])
    first = body["contents"][0]
    assert first["role"] == "user" and first["parts"][-1] == {"text": "say hello to the gateway" if name == ONE_SHOT else "read note.txt, please"}
    assert {"Read", "Bash"} <= {f["name"] for tool in body["tools"] for f in tool.get("functionDeclarations", ())}
    if name == TOOL_RESULT:
        call, result = body["contents"][1], body["contents"][2]
        assert call["role"] == "model" and call["parts"][-1]["functionCall"] == {"id": "toolu_01RelayGateRead", "name": "Read", "args": {"file_path": "/home/user/project/note.txt"}}
        response = result["parts"][0]["functionResponse"]
        assert result["role"] == "user" and response["id"] == "toolu_01RelayGateRead" and response["name"] == "Read" and NOTE in response["response"]["output"]
        assert len(body["contents"]) == 3
    else:
        assert len(body["contents"]) == 1


@pytest.mark.parametrize("name", [ONE_SHOT, TOOL_RESULT])
def test_claude_code_to_openai_chat_keeps_its_system_message_in_place(examples, name):
    to_wire = pytest.importorskip("gateway_openai.chat_request").request_to_wire
    body = to_wire(request_from_wire(examples.json(name)), "gpt-4o")
    roles = [m["role"] for m in body["messages"]]
    assert roles[:3] == ["system"] * 3 and roles[3:5] == ["user", "system"] and body["messages"][4]["content"].startswith(AGENTS)
    assert body["messages"][3]["content"][-1] == {"type": "text", "text": "say hello to the gateway" if name == ONE_SHOT else "read note.txt, please"}
    assert {"Read", "Bash"} <= {t["function"]["name"] for t in body["tools"]} and body["stream"] is True
    if name == TOOL_RESULT:
        call, result = body["messages"][5], body["messages"][6]
        assert call["tool_calls"] == [{"id": "toolu_01RelayGateRead", "type": "function", "function": {"name": "Read", "arguments": '{"file_path":"/home/user/project/note.txt"}'}}]
        assert result["role"] == "tool" and result["tool_call_id"] == "toolu_01RelayGateRead" and NOTE in result["content"]
        assert len(roles) == 7
    else:
        assert len(roles) == 5
