"""Which field of a Gemini body names a session for affinity."""

from __future__ import annotations

from gateway_gemini.protocol import GeminiProtocol

PROTOCOL = GeminiProtocol()


def test_the_cached_content_names_the_session():
    assert PROTOCOL.session_key({"cachedContent": "cachedContents/1"}) == "cachedContents/1"


def test_a_field_of_another_shape_names_none():
    assert PROTOCOL.session_key({"cachedContent": {"name": "x"}}) is None
    assert PROTOCOL.session_key({}) is None
