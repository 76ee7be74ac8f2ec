"""Anthropic's JSON output (``output_config.format``, or the older ``output_format``)
reaches an OpenAI channel as ``response_format``; an OpenAI client's own
``response_format`` is carried as it is."""

from __future__ import annotations

from gateway_core.model import ChatRequest, Message, Role, TextPart
from gateway_openai.chat_request import request_to_wire

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def request(**extra) -> ChatRequest:
    return ChatRequest(model="m", messages=(Message(Role.USER, (TextPart("hi"),)),), extra=extra)


def test_anthropics_output_format_becomes_response_format():
    for extra in ({"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}}, {"output_format": {"type": "json_schema", "schema": SCHEMA}}):
        body = request_to_wire(request(**extra), "gpt-x")
        assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "response", "schema": SCHEMA}}


def test_an_openai_clients_response_format_is_kept():
    own = {"type": "json_schema", "json_schema": {"name": "mine", "schema": SCHEMA, "strict": True}}
    assert request_to_wire(request(response_format=own), "gpt-x")["response_format"] == own
    assert "response_format" not in request_to_wire(request(), "gpt-x")
