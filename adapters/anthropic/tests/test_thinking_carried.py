"""Another protocol's request to reason reaches a Claude channel as ``thinking``:
OpenAI's ``reasoning_effort`` (chat and Responses), Gemini's ``thinkingConfig``
(budget or level); only for a model that can think, within ``max_tokens``, and
without the sampling settings thinking refuses."""

from __future__ import annotations

import pytest

from gateway_anthropic.messages_request import request_to_wire
from gateway_core.model import ChatRequest, Message, Role, TextPart


def request(max_tokens: int = 16_000, **extra) -> ChatRequest:
    return ChatRequest(model="m", messages=(Message(Role.USER, (TextPart("think"),)),), max_tokens=max_tokens, temperature=0.2, top_p=0.5, extra=extra)


@pytest.mark.parametrize(("extra", "budget"), [
    ({"reasoning_effort": "low"}, 1024), ({"reasoning_effort": "high"}, 14_976),  # high: 24,576, capped to leave 1,024 for the answer
    ({"generationConfig": {"thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": True}}}, 2048),
    ({"generationConfig": {"thinkingConfig": {"thinkingBudget": -1}}}, 8192),
    ({"generationConfig": {"thinkingConfig": {"thinkingLevel": "LOW"}}}, 1024),
])  # fmt: skip
def test_a_reasoning_request_becomes_a_thinking_budget(extra, budget):
    body = request_to_wire(request(**extra), "claude-sonnet-4-5")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert "temperature" not in body and "top_p" not in body  # thinking refuses them


@pytest.mark.parametrize(("model", "extra", "max_tokens"), [
    ("claude-sonnet-4-5", {"reasoning_effort": "minimal"}, 16_000),  # asked for none
    ("claude-sonnet-4-5", {"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}}, 16_000),
    ("claude-sonnet-4-5", {"reasoning_effort": "high"}, 1500),  # no room for 1,024 tokens of thought and an answer
    ("claude-from-a-private-deployment", {"reasoning_effort": "high"}, 16_000),  # unknown: it may refuse the field
    ("claude-3-haiku-20240307", {"reasoning_effort": "high"}, 16_000),  # cannot think
])  # fmt: skip
def test_no_thinking_where_it_cannot_be(model, extra, max_tokens):
    body = request_to_wire(request(max_tokens, **extra), model)
    assert "thinking" not in body and body["temperature"] == 0.2
