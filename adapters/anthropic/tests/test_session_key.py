"""Which field of an Anthropic body names a session for affinity."""

from __future__ import annotations

from gateway_anthropic.protocol import AnthropicProtocol

PROTOCOL = AnthropicProtocol()


def test_the_metadata_user_names_the_session():
    assert PROTOCOL.session_key({"metadata": {"user_id": "uid"}}) == "uid"


def test_a_field_of_another_shape_names_none():
    assert PROTOCOL.session_key({"metadata": "not an object"}) is None
    assert PROTOCOL.session_key({"metadata": {"user_id": 5}}) is None
    assert PROTOCOL.session_key({}) is None
