"""Opaque tokens folded into tool-call ids (gateway_core.echo_ids)."""

from __future__ import annotations

import re

from gateway_core.echo_ids import ECHO, SEPARATOR, fold_id, plain_id, split_id, split_ids
from gateway_core.model import ChatRequest, Message, Role, TextPart, ToolCallPart, ToolResultPart

ID_ALPHABET = re.compile(r"^[a-zA-Z0-9_-]+$")


def test_a_folded_id_splits_back_and_keeps_to_the_strictest_alphabet():
    token = "CiQB0e2Kb3dRh+BYdbZvmulSN2Pwwc75myDA=="  # standard base64, with + / =
    folded = fold_id("call_get_weather_0", token)
    assert folded.startswith("call_get_weather_0" + SEPARATOR) and ID_ALPHABET.match(folded)
    assert split_id(folded) == ("call_get_weather_0", token)
    assert plain_id(folded) == "call_get_weather_0"
    assert split_id(fold_id("toolu_01", "sig/ñ")) == ("toolu_01", "sig/ñ")


def test_ids_without_a_token_are_unchanged():
    for call_id in ("call_abc", "toolu_01A-b", "", "a__rg-", "a__rg-!!!", "a__rg-YQ=="):
        assert split_id(call_id) == (call_id, None)
        assert plain_id(call_id) == call_id
    assert fold_id("call_1", None) == fold_id("call_1", "") == "call_1"
    assert fold_id("x" + SEPARATOR + "y", "token") == "x" + SEPARATOR + "y"  # could not be split back: left alone


def test_split_ids_moves_each_token_to_its_call():
    call = ToolCallPart(fold_id("call_1", "sig"), "f", "{}", {"other": 1})
    result = ToolResultPart(fold_id("call_1", "sig"), (TextPart("ok"),), name="f")
    request = ChatRequest(model="m", messages=(Message(Role.ASSISTANT, (call,)), Message(Role.USER, (result,))))
    split = split_ids(request)
    assert split.messages[0].parts == (ToolCallPart("call_1", "f", "{}", {"other": 1, ECHO: "sig"}),)
    assert split.messages[1].parts == (ToolResultPart("call_1", (TextPart("ok"),), name="f"),)
    plain = ChatRequest(model="m", messages=(Message(Role.ASSISTANT, (ToolCallPart("call_2", "f"),)),))
    assert split_ids(plain) is plain
