"""Every client protocol against every cloud channel kind, through one gateway on loopback:
OpenAI chat completions and Responses (``openai``), Anthropic Messages (``anthropic``) and
Gemini generateContent (``google-genai``) × azure, bedrock (Converse), Claude and Gemini on
vertex. Each cell: a text and a stream (the tokens the client is told are the ones billed,
the cost exact in micro-USD from the price, captured once in the ledger), a tool round trip
(the result reaches the upstream in its own shape), an image in, the upstream's 400, 429 and
503 as the client SDK's own exceptions, and failover to a direct channel for the same model
when the cloud one answers 500 (billed once). Anthropic's count_tokens on each kind is in
``test_counts.py``."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import anthropic
import openai
import orjson
import pytest
from google.genai import errors as genai_errors

from gateway_core.testing import Fault

from .world import DIRECT, KINDS, PNG_B64, PROTOCOL_NAMES, World, error_model, failover_model


@pytest.fixture
def cell(world: World, clients: dict[str, Any], request: pytest.FixtureRequest):
    protocol, kind = request.param
    yield clients[protocol], KINDS[kind]
    for fake in world.upstreams.values():
        assert not fake.faults, "a queued fault was not played"


def cells(test):
    return pytest.mark.parametrize("cell", [pytest.param((p, k), id=f"{p}-{k}") for p in PROTOCOL_NAMES for k in KINDS], indirect=True)(test)


@cells
def test_text(world: World, cell) -> None:
    client, kind = cell
    text, tokens = client.ask(kind.model, f"hello {kind.name}")
    assert text == f"echo: hello {kind.name}"
    world.assert_billed(kind.model, kind.name, tokens)
    assert kind.upstream_model in unquote(world.fake(kind).requests[-1]["path"]) + world.sent(kind)  # the upstream's id


@cells
def test_stream(world: World, cell) -> None:
    client, kind = cell
    text, tokens = client.stream(kind.model, "one two three")
    assert text == "echo: one two three"
    world.assert_billed(kind.model, kind.name, tokens)


@cells
def test_tool_round_trip(world: World, cell) -> None:
    client, kind = cell
    final = client.tool_round_trip(world, kind, kind.model)
    assert final.startswith("echo:")
    sent = world.sent(kind)
    assert any(marker in sent for marker in kind.tool_result_markers) and "sunny" in sent, sent
    world.assert_billed(kind.model, kind.name)


@cells
def test_image_in(world: World, cell) -> None:
    client, kind = cell
    assert client.image(kind.model, "what is this").startswith("echo:")
    sent = world.sent(kind)
    assert kind.image_marker in sent and PNG_B64 in sent, sent
    world.assert_billed(kind.model, kind.name)


def _raised(client, model: str, status: int) -> int:
    """The status the client SDK's own exception carries (and that it is the SDK's type for it)."""
    openai_types = {400: openai.BadRequestError, 429: openai.RateLimitError, 503: openai.InternalServerError}
    anthropic_types = {400: anthropic.BadRequestError, 429: anthropic.RateLimitError, 503: anthropic.InternalServerError}
    gemini_types = {400: genai_errors.ClientError, 429: genai_errors.ClientError, 503: genai_errors.ServerError}
    expected = {"chat": openai_types, "responses": openai_types, "messages": anthropic_types, "gemini": gemini_types}[client.name][status]
    with pytest.raises(expected) as raised:
        client.fail(model)
    error = raised.value
    return int(error.code if isinstance(error, genai_errors.APIError) else error.status_code)


@cells
def test_upstream_errors_in_the_clients_shape(world: World, cell) -> None:
    client, kind = cell
    model = error_model(kind, client.name)
    for status in (400, 503, 429):  # the 429 last: it cools the channel down
        world.fake(kind).fail_next(Fault(status=status))
        assert _raised(client, model, status) == status
        row = world.last_row()
        assert (row["model"], row["status"], row["cost_micros"]) == (model, status, 0)


@cells
def test_failover_from_the_cloud_channel_to_a_direct_one(world: World, cell) -> None:
    client, kind = cell
    model = failover_model(kind, client.name)
    cloud, direct = world.fake(kind), world.upstreams[DIRECT[kind.name].channel_type]
    sent_cloud, sent_direct = len(cloud.requests), len(direct.requests)
    cloud.fail_next(Fault(status=500))
    text, tokens = client.ask(model, "fail over")
    assert text == "echo: fail over"
    assert (len(cloud.requests), len(direct.requests)) == (sent_cloud + 1, sent_direct + 1)
    same = DIRECT[kind.name].cloud_model or kind.upstream_model  # the same model on both channels
    assert same in unquote(cloud.requests[-1]["path"]) + orjson.dumps(cloud.requests[-1]["body"]).decode()
    row = world.assert_billed(model, f"{kind.name}-{client.name}-direct", tokens)
    attempts = [(a["channel"], a["status"]) for a in json.loads(row["attempts"])]
    assert attempts == [(f"{kind.name}-{client.name}-first", 500), (f"{kind.name}-{client.name}-direct", 200)]
    assert len(world.seed.rows("SELECT id FROM usage_logs WHERE request_id = ?", (row["request_id"],))) == 1
