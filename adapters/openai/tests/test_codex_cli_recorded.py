"""Codex's own request, recorded from ``codex exec`` 0.171.0 over HTTP (the WebSocket
transport sends the same body in a ``response.create`` frame; ``tests/coding_clis/test_codex.py``
drives it live), converted to the other channels' wires:
``responses_request_codex_cli_tool_output.json`` is the request after its
``exec_command`` ran (``cat note.txt``): two developer messages, the environment and
the user's words as user messages, its ``function_call`` replayed and the
``function_call_output``, its function, ``namespace`` and ``web_search`` tools."""

from __future__ import annotations

import json

import pytest

from gateway_openai.responses_request import request_from_wire

RECORDED = "responses_request_codex_cli_tool_output.json"
NOTE = "relaygate-note-7f3a: the answer is forty-two"


def test_the_recording_is_codexs_shape(examples):
    body = examples.json(RECORDED)
    assert body["stream"] is True and body["store"] is False and "instructions" not in body
    kinds = [(item["type"], item.get("role")) for item in body["input"]]
    assert kinds == [("message", "developer")] * 2 + [("message", "user")] * 2 + [("function_call", None), ("function_call_output", None)]
    assert {t["type"] for t in body["tools"]} == {"function", "namespace", "web_search"}
    assert body["input"][-1]["call_id"] == body["input"][-2]["call_id"] == "call_rg1" and NOTE in body["input"][-1]["output"]


def test_codex_to_anthropic(examples):
    to_wire = pytest.importorskip("gateway_anthropic.messages_request").request_to_wire
    body = to_wire(request_from_wire(examples.json(RECORDED)), "claude-sonnet-4-6")
    system = body["system"] if isinstance(body["system"], list) else [{"text": body["system"]}]
    assert system[0]["text"].startswith("You are a coding agent running in the Codex CLI")  # the developer messages: system
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"][-1] == {"type": "text", "text": "show me note.txt"}
    assert body["messages"][1]["content"] == [{"type": "tool_use", "id": "call_rg1", "name": "exec_command", "input": {"cmd": "cat note.txt"}}]
    result = body["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "call_rg1" and NOTE in json.dumps(result["content"])
    names = {t.get("name") for t in body["tools"]}
    assert {"exec_command", "multi_agent_v1__spawn_agent"} <= names  # a namespace's functions, flattened with its name
    assert "Codex CLI" not in json.dumps(body["messages"])


def test_codex_to_gemini(examples):
    to_wire = pytest.importorskip("gateway_gemini.request").request_to_wire
    body = to_wire(request_from_wire(examples.json(RECORDED)), signature_placeholder="skip_thought_signature_validator", model="gemini-2.5-flash")
    assert body["systemInstruction"]["parts"][0]["text"].startswith("You are a coding agent running in the Codex CLI")
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][0]["parts"][-1] == {"text": "show me note.txt"}
    assert body["contents"][1]["parts"][-1]["functionCall"] == {"id": "call_rg1", "name": "exec_command", "args": {"cmd": "cat note.txt"}}
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert response["id"] == "call_rg1" and response["name"] == "exec_command" and NOTE in json.dumps(response["response"])
    names = {f["name"] for t in body["tools"] for f in t.get("functionDeclarations", ())}
    assert {"exec_command", "multi_agent_v1__spawn_agent"} <= names and "Codex CLI" not in json.dumps(body["contents"])
