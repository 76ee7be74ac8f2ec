"""Session affinity's parts without the network: which field names a session,
and the in-process map's bounds (size and lifetime), with a fake clock."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gateway_core.routing.affinity import LocalAffinity, session_digest, session_of
from gateway_core.client_protocol import ClientProtocol
from gateway_core.config import ConfigError, config_from_mapping


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class NamedBy(ClientProtocol):
    """A protocol whose bodies name their session in ``s`` (no provider's fields:
    each adapter's own are tested in its tests, ``test_session_key.py``)."""

    name = "named-by"

    def session_key(self, body: Mapping[str, Any]) -> Any:
        return body.get("s")

    routes = read_key = parse = to_core = render_response = stream_writer = render_models = render_error = None  # type: ignore[assignment]


def test_the_session_comes_from_the_header_then_the_protocol():
    protocol = NamedBy()
    headers = {"x-session-id": "from-header"}
    assert session_of(protocol, {"s": "body"}, headers, "x-session-id") == "from-header"
    assert session_of(protocol, {"s": "body"}, {}, "x-session-id") == "body"
    assert session_of(protocol, {"s": 5}, {}, None) is None  # a protocol's odd value names none
    assert session_of(protocol, {}, {}, None) is None
    assert len(session_of(protocol, {"s": "x" * 10_000}, {}, None) or "") == 512
    assert len(session_of(protocol, {}, {"x-session-id": "y" * 10_000}, "x-session-id") or "") == 512


def test_a_protocol_names_no_session_by_default():
    class Silent(NamedBy):
        session_key = ClientProtocol.session_key  # type: ignore[assignment]

    assert session_of(Silent(), {"s": "body", "user": "u"}, {}, None) is None


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
