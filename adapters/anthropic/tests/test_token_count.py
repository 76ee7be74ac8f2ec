"""Local token counting: the shipped encodings, the framing estimate, the local count_tokens answer."""

from __future__ import annotations

import orjson
import pytest

from gateway_core import Call, endpoints
from gateway_core.model import ChatRequest, ImagePart, Message, Role, TextPart, Tool, ToolCallPart, ToolResultPart
from gateway_anthropic import token_count
from gateway_anthropic.messages_request import request_from_wire
from gateway_anthropic.protocol import ESTIMATE_HEADER, AnthropicProtocol


def test_shipped_encodings_match_tiktoken_reference_ids() -> None:
    # reference ids of tiktoken's own o200k_base / cl100k_base for this text
    assert token_count.get_encoding("o200k_base").encode_ordinary("Hello, world!") == [13225, 11, 2375, 0]
    assert token_count.get_encoding("cl100k_base").encode_ordinary("Hello, world!") == [9906, 11, 1917, 0]
    assert token_count.get_encoding("o200k_base") is token_count.get_encoding("o200k_base")  # loaded once


def test_encoding_follows_the_model_name() -> None:
    assert token_count.encoding_name_for("gpt-4") == "cl100k_base"
    assert token_count.encoding_name_for("gpt-4o-mini") == "o200k_base"
    assert token_count.encoding_name_for("claude-sonnet-4-5") == "o200k_base"  # unknown: the default


def test_count_adds_the_framing_estimate_to_the_exact_text_tokens() -> None:
    encoding = token_count.get_encoding("o200k_base")
    text = "The quick brown fox jumps over the lazy dog."
    request = ChatRequest(model="gpt-4o", messages=(Message(Role.USER, (TextPart(text),)),))
    count = token_count.count_input_tokens(request)
    assert count == token_count.TokenCount(len(encoding.encode_ordinary(text)) + 3 + 3, "o200k_base", exact=False)
    richer = ChatRequest(
        model="gpt-4o",
        system=(TextPart("Be brief."),),
        messages=(
            Message(Role.USER, (TextPart(text), ImagePart(url="https://x/y.png"))),
            Message(Role.ASSISTANT, (ToolCallPart("c1", "lookup", '{"q": "fox"}'),)),
            Message(Role.USER, (ToolResultPart("c1", (TextPart("a fox"),)),)),
        ),
        tools=(Tool("lookup", "Look things up", {"type": "object"}),),
    )
    assert token_count.count_input_tokens(richer).input_tokens > count.input_tokens + token_count.IMAGE_TOKENS


def test_special_token_text_is_counted_as_plain_text() -> None:
    request = ChatRequest(model="gpt-4o", messages=(Message(Role.USER, (TextPart("<|endoftext|>"),)),))
    assert token_count.count_input_tokens(request).input_tokens > 3 + 3 + 1


def test_claude_code_request_counts_every_kind_of_block(examples) -> None:
    request = request_from_wire(examples.json("messages_request_claude_code.json"))
    count = token_count.count_input_tokens(request)
    assert 100 < count.input_tokens < 1000


async def test_local_answer_says_it_is_an_estimate(examples) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello, world!"}]}
    call = Call("anthropic", endpoints.COUNT_TOKENS, "anthropic.count_tokens", "gpt-4o", False, body)
    answer = await AnthropicProtocol().answer_locally(call)
    assert answer is not None and answer.estimated
    assert orjson.loads(answer.body) == {"input_tokens": 4 + 3 + 3}
    assert answer.headers == {ESTIMATE_HEADER: "estimate; encoding=o200k_base"}
    chat = Call("anthropic", endpoints.CHAT, "anthropic.messages", "gpt-4o", False, body)
    assert await AnthropicProtocol().answer_locally(chat) is None


def test_a_damaged_encoding_file_is_refused(monkeypatch) -> None:
    monkeypatch.setitem(token_count.SPECS, "o200k_base", token_count.EncodingSpec("x", {}, "0" * 64))
    with pytest.raises(RuntimeError, match="damaged"):
        token_count._load("o200k_base")
