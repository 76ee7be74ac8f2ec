"""Session affinity's parts without the network: which field names a session,
and the in-process map's bounds (size and lifetime), with a fake clock."""

from __future__ import annotations

import pytest

from gateway_core.affinity import LocalAffinity, session_digest, session_of
from gateway_core.config import ConfigError, config_from_mapping


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_session_comes_from_the_header_then_the_body():
    headers = {"x-session-id": "from-header"}
    body = {"prompt_cache_key": "pck", "metadata": {"user_id": "uid"}, "user": "u", "cachedContent": "cachedContents/1"}
    assert session_of(body, headers, "x-session-id") == "from-header"
    assert session_of(body, {}, "x-session-id") == "pck"
    assert session_of({"metadata": {"user_id": "uid"}, "user": "u"}, {}, None) == "uid"
    assert session_of({"user": "u"}, {}, None) == "u"
    assert session_of({"cachedContent": "cachedContents/1"}, {}, None) == "cachedContents/1"
    assert session_of({"metadata": "not an object", "user": 5}, {}, None) is None
    assert session_of({}, {}, None) is None
    assert len(session_of({"user": "x" * 10_000}, {}, None) or "") == 512


def test_digests_keep_keys_apart_and_hide_the_session():
    assert session_digest(1, "s") != session_digest(2, "s")
    assert session_digest(1, "s") == session_digest(1, "s") and "s" not in session_digest(1, "secret-session")


async def test_the_local_map_is_bounded_and_forgets_idle_sessions():
    clock = Clock()
    places = LocalAffinity(ttl=10.0, max_entries=3, header=None, clock=clock)
    for n in range(5):
        places.remember(f"s{n}", (n, "fp"))
    assert len(places) == 3  # the two least recently used went first
    assert await places.recall("s0") is None and await places.recall("s4") == (4, "fp")
    clock.now += 8
    assert await places.recall("s2") == (2, "fp")  # used: its lifetime starts again
    clock.now += 5
    assert await places.recall("s3") is None  # idle for 13 s
    assert await places.recall("s2") == (2, "fp")
    places.forget("s2")
    assert await places.recall("s2") is None


def test_routing_settings():
    config = config_from_mapping({"gateway": {"breaker_last_resort": 0, "session_affinity": True, "session_header": "X-Conv",
                                              "session_ttl": 60, "session_max_entries": 10}})  # fmt: skip
    assert (config.breaker_last_resort, config.session_affinity, config.session_header, config.session_ttl, config.session_max_entries) == (
        0.0, True, "x-conv", 60.0, 10)
    defaults = config_from_mapping({})
    assert (defaults.breaker_last_resort, defaults.session_affinity, defaults.session_ttl) == (1.0, False, 600.0)
    for bad in ({"breaker_last_resort": -1}, {"session_affinity": "yes"}, {"session_ttl": 0}, {"session_max_entries": 0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            config_from_mapping({"gateway": bad})
