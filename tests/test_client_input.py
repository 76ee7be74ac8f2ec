"""No input of a client's is a 500: every client protocol checks the shape it reads
(``gateway_core.json_body`` limits, then its fields), and the relay turns anything
else a protocol's parsing raises into a 400 in the protocol's shape.

The property tests send, through a real gateway with a channel of each type (fake
upstreams speaking the providers' wire), a valid body of each protocol with one
field — anywhere in it — replaced by an arbitrary JSON value, and whole arbitrary
bodies: the answer is a 2xx, or a 4xx in the calling protocol's error shape. A
bounded number of examples runs in the normal suite; ``make fuzz`` runs many more.
"""

from __future__ import annotations

import asyncio
import http.client
import json
from collections import Counter
from typing import Any

import orjson
import pytest
from hypothesis import given, strategies as st

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core import RouteSpec, endpoints, hookimpl
from gateway_core.config import ConfigError, config_from_mapping
from gateway_core.errors import InvalidRequestError
from gateway_core.json_body import INT64_MAX, JsonLimits, check_json, read_json_object
from gateway_core.testing import paths_of, replaced
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI

MODELS = ("via-openai", "via-anthropic", "via-gemini")


# --- the limits ------------------------------------------------------------------


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_limits_refuse_depth_strings_items_and_integers_naming_where():
    limits = JsonLimits(max_depth=4, max_string_chars=5, max_items=3, max_integer=100)
    check_json({"a": [{"b": "12345"}], "n": -101 + 1}, limits)
    cases = {
        "a.0.0.0: JSON nested deeper than 4 levels": {"a": nested(4)},
        "s: a string longer than 5 characters": {"s": "123456"},
        "a: more than 3 items": {"a": [1, 2, 3, 4]},
        "x.1: an integer outside -101..100": {"x": [0, 101]},
        "x: an integer outside -101..100": {"x": -102},
    }
    for message, body in cases.items():
        with pytest.raises(InvalidRequestError) as refused:
            check_json(body, limits)
        assert refused.value.message == message + "."
        assert refused.value.status == 400


def test_a_body_too_small_to_cross_the_string_and_item_limits_is_still_checked_for_depth_and_integers():
    """The walk that looks only at depth and integers (no string or item count can cross
    its limit at the body's size) refuses what the full walk refuses, and nothing else."""
    limits = JsonLimits(max_depth=4, max_string_chars=1000, max_items=1000, max_integer=100)
    fine = {"a": [{"b": "12345", "t": True, "f": 1.5e300}], "n": -101, "m": 100}
    check_json(fine, limits, len(orjson.dumps(fine)))
    check_json(nested(3, "x" * 10), limits, 100)
    cases = {
        "a.0.0.0: JSON nested deeper than 4 levels": {"a": nested(4)},
        "x.1: an integer outside -101..100": {"x": [0, 101]},
        "x: an integer outside -101..100": {"x": -102},
        "the body: an integer outside -101..100": 101,
    }
    for message, body in cases.items():
        with pytest.raises(InvalidRequestError) as refused:
            check_json(body, limits, len(orjson.dumps(body)))
        assert refused.value.message == message + "."


def test_read_json_object_refuses_what_is_not_an_object_within_limits():
    assert read_json_object(b'{"a": [1]}') == {"a": [1]}
    for body, said in [
        (b"", "empty"), (b"{", "not valid JSON"), (b"[1]", "must be a JSON object, not an array"),
        (b'{"a": ' + b"[" * 300 + b"]" * 300 + b"}", "nested deeper than 64 levels"),
        (b'{"a": 18446744073709551615}', "an integer outside"),
    ]:  # fmt: skip
        with pytest.raises(InvalidRequestError, match=said):
            read_json_object(body)


def test_limits_are_configured_under_gateway_json():
    config = config_from_mapping({"gateway": {"json": {"max_depth": 10, "max_items": 50}}})
    assert config.json_limits == JsonLimits(max_depth=10, max_items=50)
    assert config_from_mapping({}).json_limits == JsonLimits(max_depth=64, max_integer=INT64_MAX)
    for table, said in [
        ({"max_depth": 250}, "max_depth must be at most 200"),
        ({"max_integer": 2**64}, "max_integer must be at most"),
        ({"max_items": 0}, "max_items must be a positive integer"),
        ({"depth": 3}, "unknown \\[gateway.json\\] setting"),
    ]:
        with pytest.raises(ConfigError, match=said):
            config_from_mapping({"gateway": {"json": table}})


# --- a gateway with a channel of each type ------------------------------------------------


@pytest.fixture
async def upstreams(fake_upstream):
    return await fake_upstream(FakeOpenAI()), await fake_upstream(FakeAnthropic()), await fake_upstream(FakeGemini())


@pytest.fixture
def gateway(seed, start_gateway, upstreams):
    openai_up, anthropic_up, gemini_up = upstreams
    user = seed.user("alice", balance_usd=100)
    _, key = seed.key(user)
    seed.channel("oai", type="openai", base_url=openai_up.url + "/v1", models=["via-openai", "priced"])
    seed.channel("ant", type="anthropic", base_url=anthropic_up.url, models=["via-anthropic"], api_keys=[ANTHROPIC_KEY])
    seed.channel("gem", type="gemini", base_url=gemini_up.url + "/v1beta", models=["via-gemini"])
    seed.price("priced", 1_000_000, 2_000_000)
    return Client(start_gateway().url, key)


class Client:
    """Raw HTTP to the gateway (bodies no SDK would send), one kept-alive connection."""

    def __init__(self, url: str, key: str) -> None:
        self.host, self.port = url.removeprefix("http://").rsplit(":", 1)
        self.key = key
        self.conn: http.client.HTTPConnection | None = None
        self.statuses: Counter[int] = Counter()  # of every answer, for the fuzz run's report

    def post(self, protocol: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        headers = {"content-type": "application/json"}
        if protocol == "anthropic":
            headers |= {"x-api-key": self.key, "anthropic-version": "2023-06-01"}
        elif protocol == "gemini":
            headers["x-goog-api-key"] = self.key
        else:
            headers["authorization"] = f"Bearer {self.key}"
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, int(self.port), timeout=30)
            try:
                self.conn.request("POST", path, body=body, headers=headers)
                response = self.conn.getresponse()
                self.statuses[response.status] += 1
                return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def assert_answer_in_shape(protocol: str, status: int, headers: dict[str, str], body: bytes) -> None:
    """A 2xx, or a 4xx whose body is the protocol's error shape; never a 5xx."""
    assert status < 500, (status, body[:500])
    if status < 300:
        if headers.get("content-type", "").startswith("application/json"):
            orjson.loads(body)
        return
    assert 400 <= status < 500, status
    error = orjson.loads(body)
    if protocol == "anthropic":
        assert error["type"] == "error" and isinstance(error["error"]["type"], str) and error["error"]["message"]
    elif protocol == "gemini":
        assert error["error"]["code"] == status and isinstance(error["error"]["status"], str) and error["error"]["message"]
    else:
        assert isinstance(error["error"]["type"], str) and error["error"]["message"]


def deep(depth: int) -> Any:
    return nested(depth, {"type": "object"})


# Each found case: (protocol, path, body); every one once a 500.
FOUND = {
    "openai messages nested 300 deep": ("openai", "/v1/chat/completions", {"model": "via-anthropic", "messages": [{"role": "user", "content": deep(300)}]}),
    "openai tool schema nested 300 deep": ("openai", "/v1/chat/completions", {
        "model": "via-gemini", "messages": [{"role": "user", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": deep(300)}}}}],
    }),
    "gemini contents nested 300 deep": ("gemini", "/v1beta/models/via-openai:generateContent", {"contents": [{"role": "user", "parts": [{"text": "x", "z": deep(300)}]}]}),
    "anthropic messages nested 300 deep": ("anthropic", "/v1/messages", {"model": "via-anthropic", "max_tokens": 5, "messages": [{"role": "user", "content": deep(300)}]}),
    "anthropic role a list": ("anthropic", "/v1/messages", {"model": "via-openai", "max_tokens": 5, "messages": [{"role": ["user"], "content": "x"}]}),
    "anthropic role an object": ("anthropic", "/v1/messages", {"model": "via-gemini", "max_tokens": 5, "messages": [{"role": {"a": 1}, "content": "x"}]}),
    "anthropic tool_choice type a list": ("anthropic", "/v1/messages", {"model": "via-openai", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": ["auto"]}}),
    "anthropic max_tokens past 64 bits as a float": ("anthropic", "/v1/messages", {"model": "via-openai", "max_tokens": 1e30, "messages": [{"role": "user", "content": "x"}]}),
    "gemini maxOutputTokens past 64 bits as a string": ("gemini", "/v1beta/models/via-openai:generateContent", {"contents": [{"parts": [{"text": "x"}]}], "generationConfig": {"maxOutputTokens": "99999999999999999999999"}}),
    "openai max_tokens past 64 bits to a gemini channel": ("openai", "/v1/chat/completions", {"model": "via-gemini", "max_tokens": 10**30, "messages": [{"role": "user", "content": "x"}]}),
    "openai seed past 64 bits": ("openai", "/v1/chat/completions", {"model": "via-anthropic", "seed": 2**64 - 1, "messages": [{"role": "user", "content": "x"}]}),
    "anthropic count_tokens junk messages": ("anthropic", "/v1/messages/count_tokens", {"model": "via-openai", "messages": [1, "x", None]}),
    "anthropic count_tokens role a list": ("anthropic", "/v1/messages/count_tokens", {"model": "via-gemini", "messages": [{"role": [], "content": "x"}]}),
    "gemini countTokens junk contents": ("gemini", "/v1beta/models/via-openai:countTokens", {"contents": [{"parts": 5}, 7]}),
}


@pytest.mark.parametrize("case", FOUND)
async def test_found_cases_are_the_clients_400_in_its_shape(gateway, case):
    protocol, path, body = FOUND[case]
    status, headers, answer = await asyncio.to_thread(gateway.post, protocol, path, json.dumps(body).encode())
    assert_answer_in_shape(protocol, status, headers, answer)
    assert status == 400, answer


async def test_max_tokens_near_2_63_on_a_priced_model_is_refused_before_the_wallet(gateway, seed):
    body = {"model": "priced", "max_tokens": INT64_MAX, "messages": [{"role": "user", "content": "x"}]}
    status, headers, answer = await asyncio.to_thread(gateway.post, "openai", "/v1/chat/completions", orjson.dumps(body))
    assert status == 429, answer
    assert orjson.loads(answer)["error"]["code"] == "insufficient_quota"
    assert seed.rows("SELECT balance_micros FROM users WHERE name = 'alice'") == [{"balance_micros": 100_000_000}]


# --- property tests ------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)

BASES: dict[str, tuple[str, Any]] = {  # (path, a valid body) per protocol and endpoint
    "openai.chat": ("/v1/chat/completions", {
        "model": "M", "max_tokens": 20, "temperature": 0.5,
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": "ok"}],
        "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}],
        "tool_choice": "auto", "stop": ["x"],
    }),
    "openai.responses": ("/v1/responses", {
        "model": "M", "max_output_tokens": 20, "instructions": "be brief",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}], "store": False,
    }),
    "openai.embeddings": ("/v1/embeddings", {"model": "M", "input": ["a", "b"]}),
    "anthropic.messages": ("/v1/messages", {
        "model": "M", "max_tokens": 20, "system": [{"type": "text", "text": "be brief"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}],
        "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}],
        "tool_choice": {"type": "auto"}, "metadata": {"user_id": "u"}, "stop_sequences": ["x"],
    }),
    "anthropic.count_tokens": ("/v1/messages/count_tokens", {"model": "M", "messages": [{"role": "user", "content": "hi"}]}),
    "gemini.generate": ("/v1beta/models/M:generateContent", {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]},
                     {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]},
                     {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"ok": True}}}]}],
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}}}}]}],
        "generationConfig": {"maxOutputTokens": 20, "temperature": 0.5, "stopSequences": ["x"]},
    }),
    "gemini.count_tokens": ("/v1beta/models/M:countTokens", {"contents": [{"parts": [{"text": "hi"}]}]}),
    "gemini.stream": ("/v1beta/models/M:streamGenerateContent?alt=sse", {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": {"maxOutputTokens": 20},
    }),
    "openai.chat_stream": ("/v1/chat/completions", {
        "model": "M", "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 20,
        "messages": [{"role": "user", "content": "hi"}],
    }),
    "anthropic.messages_stream": ("/v1/messages", {"model": "M", "max_tokens": 20, "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
    "openai.images": ("/v1/images/generations", {"model": "M", "prompt": "a lighthouse", "n": 1, "size": "256x256", "response_format": "b64_json"}),
    "openai.speech": ("/v1/audio/speech", {"model": "M", "input": "hello", "voice": "alloy", "response_format": "mp3"}),
}


def protocol_of(name: str) -> str:
    return name.split(".", 1)[0]


def send(gateway: Client, name: str, model: str, body: Any) -> None:
    path, _ = BASES[name]
    if isinstance(body, dict) and protocol_of(name) != "gemini" and body.get("model") == "M":
        body = {**body, "model": model}
    path = path.replace("/M:", f"/{model}:")
    status, headers, answer = gateway.post(protocol_of(name), path, json.dumps(body).encode())
    assert_answer_in_shape(protocol_of(name), status, headers, answer)


@st.composite
def one_field_replaced(draw, name: str):
    _, base = BASES[name]
    path = draw(st.sampled_from(paths_of(base)))
    return replaced(base, path, draw(json_values | st.sampled_from([deep(300), 2**63, -(2**63) - 1, 10**30, "x" * 10])))


# the fake upstreams answer on the test's event loop: hypothesis drives the examples from a thread


@pytest.mark.parametrize("name", BASES)
async def test_any_json_value_in_any_field_is_answered_2xx_or_4xx_in_shape(gateway, name):
    @given(body=one_field_replaced(name), model=st.sampled_from(MODELS))
    def check(body, model):
        send(gateway, name, model, body)

    await asyncio.to_thread(check)
    report(name, "one field", gateway)


@pytest.mark.parametrize("name", BASES)
async def test_any_json_body_is_answered_2xx_or_4xx_in_shape(gateway, name):
    @given(body=json_values | st.dictionaries(st.sampled_from(["model", "messages", "contents", "input", "max_tokens", "tools", "stream"]), json_values), model=st.sampled_from(MODELS))
    def check(body, model):
        send(gateway, name, model, body)

    await asyncio.to_thread(check)
    report(name, "any body", gateway)


def report(name: str, kind: str, gateway: Client) -> None:
    """One line per property test (``pytest -s``): how many requests, by status."""
    statuses = " ".join(f"{status}:{count}" for status, count in sorted(gateway.statuses.items()))
    print(f"\nfuzz {name} ({kind}): {sum(gateway.statuses.values())} requests, {statuses}")


# --- the relay's net: whatever a protocol's parsing raises is the client's 400 ---------------


class BrokenParsing:
    """A plugin whose protocol (the OpenAI one on another path) fails on some input
    the way an unforeseen gap in a protocol's checks would."""

    @hookimpl
    def register_client_protocols(self, register):
        from gateway_openai.protocol import OpenAIProtocol

        class Broken(OpenAIProtocol):
            name = "broken"

            def routes(self):
                return (RouteSpec("/broken/chat", endpoints.CHAT),)

            def parse(self, route, body, headers, query, path_params):
                data = read_json_object(body)
                return {"a": 1}[data["missing"]]  # a KeyError nobody foresaw

        register(Broken())


async def test_an_exception_from_a_protocols_parsing_is_a_400_in_its_shape_with_the_request_id(seed, start_gateway, capsys):
    _, key = seed.key(seed.user("alice"))
    gateway = start_gateway(extra_plugins=[BrokenParsing()])
    client = Client(gateway.url, key)
    status, headers, body = await asyncio.to_thread(client.post, "openai", "/broken/chat", b'{"missing": "x"}')
    assert status == 400
    error = orjson.loads(body)["error"]
    assert error["code"] == "invalid_request_shape" and error["type"] == "invalid_request_error"
    assert headers["x-request-id"] in error["message"] and "KeyError" in error["message"]
    logged = capsys.readouterr().out
    assert "client request unreadable" in logged and headers["x-request-id"] in logged
