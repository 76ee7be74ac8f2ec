"""Whatever bytes an upstream sends — as an SSE stream or as a whole answer, for each
channel type (openai, anthropic, gemini) and a client of each protocol — the
client gets a well-formed answer (a 200 whose JSON or SSE events all parse) or a
502 in its own protocol's shape: never a 500, never an exception the gateway
logs as its own failure, and the worker's memory does not grow with them.

The material is the fakes' own valid answers (captured at the start, in each
provider's wire), cut into frames, then mutated: frames dropped, repeated,
reordered or cut short, one JSON field replaced by any value, raw bytes and
SSE oddities (comments, ``event:`` lines, CR line ends, ``[DONE]`` early) put
in, and the whole written in arbitrary pieces. A few examples run in the normal
suite; ``make fuzz`` (``HYPOTHESIS_PROFILE=fuzz``) runs many more.
"""

from __future__ import annotations

import asyncio
import http.client
import contextlib
import json
import tracemalloc
from collections import deque
from typing import Any

import attrs
import orjson
import pytest
from aiohttp import web
from hypothesis import given, settings, strategies as st
from hypothesis.internal.conjecture import providers as hypothesis_providers
from hypothesis.strategies import SearchStrategy

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.testing import paths_of, replaced
from gateway_core.testing.fake_upstream import FakeUpstream
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI

CHANNEL_TYPES = ("openai", "anthropic", "gemini")
CLIENTS = ("openai", "anthropic", "gemini")
PROMPT = "tell me a short story"


@attrs.define
class RawUpstream(FakeUpstream):
    """Answers every request of the three providers' paths with the next bytes
    queued (``answers``: content type and the pieces to write, in order)."""

    api_key: str | None = None
    answers: deque[tuple[str, list[bytes]]] = attrs.field(factory=deque)

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/chat/completions", self.answer_raw)
        router.add_post("/v1/messages", self.answer_raw)
        router.add_post("/v1beta/models/{target}", self.answer_raw)

    def check(self, request: web.Request, body: Any) -> web.Response | None:
        return None

    async def answer_raw(self, request: web.Request) -> web.StreamResponse:
        await self.admit(request, await request.read())
        content_type, pieces = self.answers.popleft()
        response = web.StreamResponse(headers={"Content-Type": content_type})
        await response.prepare(request)
        for piece in pieces:
            await response.write(piece)
        await response.write_eof()
        return response


# --- the material: each provider's valid answers, as its fake sends them -------------------


def request_for(channel_type: str, stream: bool) -> tuple[str, dict[str, str], dict[str, Any]]:
    messages = [{"role": "user", "content": PROMPT}]
    if channel_type == "openai":
        body: dict[str, Any] = {"model": "m", "messages": messages, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        return "/v1/chat/completions", {"authorization": "Bearer sk-upstream-test"}, body
    if channel_type == "anthropic":
        headers = {"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"}
        return "/v1/messages", headers, {"model": "m", "max_tokens": 50, "messages": messages, "stream": stream}
    target = "m:streamGenerateContent?alt=sse" if stream else "m:generateContent"
    return f"/v1beta/models/{target}", {"x-goog-api-key": "sk-upstream-test"}, {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}


def post(url: str, path: str, headers: dict[str, str], body: Any, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json", **headers})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def frames_of(stream: bytes) -> list[bytes]:
    """An SSE stream cut after each blank line (each frame keeps its end)."""
    text = stream.replace(b"\r\n", b"\n")
    return [frame + b"\n\n" for frame in text.split(b"\n\n") if frame.strip()]


@pytest.fixture(scope="module")
def material() -> dict[str, dict[str, Any]]:
    """Per channel type: its fake's valid frames and its whole JSON answer."""

    async def capture() -> dict[str, dict[str, Any]]:
        from gateway_core.testing.fake_upstream import UpstreamServers

        servers = UpstreamServers()
        try:
            fakes = {"openai": FakeOpenAI(), "anthropic": FakeAnthropic(), "gemini": FakeGemini()}
            out: dict[str, dict[str, Any]] = {}
            for name, fake in fakes.items():
                await servers.start(fake)
                path, headers, body = request_for(name, True)
                status, _, streamed = await asyncio.to_thread(post, fake.url, path, headers, body)
                assert status == 200, streamed
                path, headers, body = request_for(name, False)
                status, _, whole = await asyncio.to_thread(post, fake.url, path, headers, body)
                assert status == 200, whole
                out[name] = {"frames": frames_of(streamed), "answer": orjson.loads(whole)}
            return out
        finally:
            await servers.close()

    return asyncio.run(capture())


# --- mutations ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
ODDITIES = st.sampled_from([
    b": keep-alive\n\n", b"event: ping\ndata: {}\n\n", b"data: [DONE]\n\n", b"data:\n\n", b"data: {\n\n", b"data: null\n\n",
    b"data: 12\n\n", b'data: "x"\n\n', b"retry: 10\n\n", b"\n\n\n", b"data: {}\r\n\r\n", b"id: 1\ndata: []\n\n",
    b"event: error\ndata: {\"error\": {\"message\": \"boom\"}}\n\n", b"\xff\xfe\x00", b"data: \xc3\x28\n\n",
])


@st.composite
def mutated_frame(draw, frames: list[bytes]) -> bytes:
    frame = draw(st.sampled_from(frames))
    how = draw(st.sampled_from(["field", "cut", "bytes", "as-is"]))
    if how == "cut":
        return frame[: draw(st.integers(0, max(0, len(frame) - 1)))]
    if how == "bytes":
        return draw(st.binary(max_size=40))
    if how == "field":
        lines = frame.split(b"\n")
        for i, line in enumerate(lines):
            if line.startswith(b"data:"):
                try:
                    data = orjson.loads(line[5:])
                except orjson.JSONDecodeError:
                    return frame
                paths = paths_of(data) if isinstance(data, (dict, list)) else []
                if not paths:
                    return frame
                value = draw(json_values)
                lines[i] = b"data: " + json.dumps(replaced(data, draw(st.sampled_from(paths)), value)).encode()
                return b"\n".join(lines)
    return frame


@st.composite
def sse_bodies(draw, frames: list[bytes]) -> list[bytes]:
    """A stream made of the valid frames, mutated; returned as the pieces to write."""
    parts = draw(st.lists(st.one_of(st.sampled_from(frames), mutated_frame(frames), ODDITIES), min_size=0, max_size=10))
    if draw(st.booleans()):  # most streams start as the provider's do
        parts = frames[:2] + parts
    stream = b"".join(parts)
    if draw(st.booleans()):
        stream = stream.replace(b"\n", b"\r\n")
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=4)))
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(stream[start:cut])
        start = cut
    pieces.append(stream[start:])
    return [piece for piece in pieces if piece]


@st.composite
def whole_bodies(draw, answer: Any) -> bytes:
    how = draw(st.sampled_from(["field", "cut", "bytes", "value"]))
    if how == "field":
        return json.dumps(replaced(answer, draw(st.sampled_from(paths_of(answer))), draw(json_values))).encode()
    if how == "cut":
        data = json.dumps(answer).encode()
        return data[: draw(st.integers(0, len(data) - 1))]
    if how == "bytes":
        return draw(st.binary(max_size=200))
    return json.dumps(draw(json_values)).encode()


# --- what the client must get --------------------------------------------------------------


def client_request(protocol: str, model: str, stream: bool) -> tuple[str, dict[str, Any], dict[str, str]]:
    messages = [{"role": "user", "content": PROMPT}]
    if protocol == "openai":
        return "/v1/chat/completions", {"model": model, "messages": messages, "stream": stream}, {}
    if protocol == "anthropic":
        return "/v1/messages", {"model": model, "max_tokens": 50, "messages": messages, "stream": stream}, {"anthropic-version": "2023-06-01"}
    target = f"{model}:streamGenerateContent?alt=sse" if stream else f"{model}:generateContent"
    return f"/v1beta/models/{target}", {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}, {}


def assert_well_formed(protocol: str, stream: bool, status: int, headers: dict[str, str], body: bytes) -> None:
    assert status in (200, 502), (status, body[:300])
    if status == 502:
        error = orjson.loads(body)
        if protocol == "anthropic":
            assert error["type"] == "error" and error["error"]["message"], error
        elif protocol == "gemini":
            assert error["error"]["code"] == 502 and error["error"]["message"], error
        else:
            assert error["error"]["message"], error
        return
    if not stream or not headers.get("content-type", "").startswith("text/event-stream"):
        orjson.loads(body)
        return
    # every event a client dispatches (SSE: its data lines joined, not empty) is JSON;
    # other lines are fields a client ignores when it does not know them (a fast path
    # forwards the upstream's own)
    data: list[bytes] = []
    for line in body.replace(b"\r\n", b"\n").split(b"\n") + [b""]:
        if line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
        elif not line:
            event, data = b"\n".join(data), []
            if event and event != b"[DONE]":
                orjson.loads(event)


@pytest.fixture
async def raw(fake_upstream) -> RawUpstream:
    return await fake_upstream(RawUpstream())


@pytest.fixture
def gateway(seed, start_gateway, relaygate_config, raw):
    user = seed.user("alice", balance_usd=100)
    _, key = seed.key(user)
    seed.channel("oai", type="openai", base_url=raw.url + "/v1", models=["via-openai"])
    seed.channel("ant", type="anthropic", base_url=raw.url, models=["via-anthropic"], api_keys=[ANTHROPIC_KEY])
    seed.channel("gem", type="gemini", base_url=raw.url + "/v1beta", models=["via-gemini"])
    for model in ("via-openai", "via-anthropic", "via-gemini"):
        seed.price(model, 1_000_000, 2_000_000)
    # every broken answer is a channel failure: keep the breakers out of the way
    config = attrs.evolve(relaygate_config, breaker_failures=1_000_000, max_attempts=1)
    return start_gateway(config), key


def ask(gateway, protocol: str, channel_type: str, stream: bool) -> tuple[int, dict[str, str], bytes]:
    server, key = gateway
    path, body, extra = client_request(protocol, f"via-{channel_type}", stream)
    auth = {"anthropic": {"x-api-key": key}, "gemini": {"x-goog-api-key": key}}.get(protocol, {"authorization": f"Bearer {key}"})
    return post(server.url, path, {**auth, **extra}, body)


@contextlib.contextmanager
def peak_allocated_mib():
    """The most memory allocated at once during the block (MiB, every thread of the
    process: the test's own and the gateway's), counting only what the block
    allocated — not the process's lifetime peak, which earlier tests may have raised."""
    peak = [0.0]
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak[0] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()



WARM_UP_EXAMPLES = 10


def run_measured(check, **strategies: SearchStrategy) -> float:
    """Run the property ``check`` over ``strategies``: a few examples first, then the
    profile's number while memory is measured; the peak MiB of the second run.

    The first run takes what is allocated once per process out of the figure: the
    gateway's first requests, and Hypothesis's own start, which reads every module
    of the project for constants the first time a draw asks for one (with no
    ``.hypothesis/`` cache, as in a fresh clone, about 200 MiB under ``tracemalloc``)."""
    settings(max_examples=WARM_UP_EXAMPLES)(given(**strategies)(check))()
    # a draw asks for constants only now and then: have them read now, whichever did
    read_constants = getattr(hypothesis_providers, "_get_local_constants", None)
    if read_constants is not None:
        read_constants()
    with peak_allocated_mib() as peak:
        given(**strategies)(check)()
    return peak[0]

@pytest.mark.parametrize("channel_type", CHANNEL_TYPES)
async def test_property_any_bytes_as_a_stream_give_a_well_formed_answer_or_a_502(gateway, raw, material, channel_type, capsys):
    frames = material[channel_type]["frames"]

    def check(pieces, client):
        raw.answers.append(("text/event-stream", pieces))
        answer = ask(gateway, client, channel_type, True)
        try:
            assert_well_formed(client, True, *answer)
        except (AssertionError, ValueError) as error:
            raise AssertionError(f"{client} client, upstream sent {b''.join(pieces)!r}, got {answer!r}") from error

    peak = await asyncio.to_thread(run_measured, check, pieces=sse_bodies(frames), client=st.sampled_from(CLIENTS))
    assert peak < 50
    assert "request failed" not in capsys.readouterr().out  # the gateway's own failures are logged so


@pytest.mark.parametrize("channel_type", CHANNEL_TYPES)
async def test_property_any_bytes_as_a_whole_answer_give_a_well_formed_answer_or_a_502(gateway, raw, material, channel_type, capsys):
    answer = material[channel_type]["answer"]

    def check(body, client, content_type):
        raw.answers.append((content_type, [body]))
        answer = ask(gateway, client, channel_type, False)
        try:
            assert_well_formed(client, False, *answer)
        except (AssertionError, ValueError) as error:
            raise AssertionError(f"{client} client, upstream sent {body!r} ({content_type}), got {answer!r}") from error

    content_types = st.sampled_from(["application/json", "text/plain"])
    peak = await asyncio.to_thread(run_measured, check, body=whole_bodies(answer), client=st.sampled_from(CLIENTS), content_type=content_types)
    assert peak < 50
    assert "request failed" not in capsys.readouterr().out


async def test_the_material_is_each_providers_own_wire(material):
    """The frames mutated above are the fakes' valid streams, in each wire."""
    assert any(b"chat.completion.chunk" in frame for frame in material["openai"]["frames"])
    assert any(frame.startswith(b"event: message_start") for frame in material["anthropic"]["frames"])
    assert any(b"candidates" in frame for frame in material["gemini"]["frames"])
