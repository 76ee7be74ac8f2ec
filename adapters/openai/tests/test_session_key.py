"""Which fields of an OpenAI body name a session for affinity, in which order."""

from __future__ import annotations

from gateway_openai.protocol import OpenAIProtocol

PROTOCOL = OpenAIProtocol()


def test_the_cache_key_then_the_metadata_user_then_the_user_name_the_session():
    body = {"prompt_cache_key": "pck", "metadata": {"user_id": "uid"}, "user": "u"}
    assert PROTOCOL.session_key(body) == "pck"
    assert PROTOCOL.session_key({"metadata": {"user_id": "uid"}, "user": "u"}) == "uid"
    assert PROTOCOL.session_key({"user": "u"}) == "u"


def test_a_field_of_another_shape_names_none():
    assert PROTOCOL.session_key({"metadata": "not an object", "user": 5}) is None
    assert PROTOCOL.session_key({"prompt_cache_key": ["x"]}) is None
    assert PROTOCOL.session_key({}) is None
