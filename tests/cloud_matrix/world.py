"""What the matrix runs on: the cloud channel kinds (each a channel type with its settings
and the fake serving it), the failover pairs (a cloud channel first, a direct one second, for
one model), and the world a module's tests share (the gateway, the store, the fakes).

Every model has the billing kit's price (:data:`gateway_core.billing.testing.INPUT` and
``OUTPUT``), so a cost is checked with :func:`~gateway_core.billing.testing.expected_cost`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import attrs
import orjson

from gateway_core.billing.testing import expected_cost, ledger_of
from gateway_core.testing import FakeUpstream, GatewayThread, Seed

JSON = dict[str, Any]
# a 1×1 PNG
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
PNG_B64 = base64.b64encode(PNG).decode()
CITY = {"city": "Paris"}
PROTOCOL_NAMES = ("chat", "responses", "messages", "gemini")
BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@attrs.frozen
class Kind:
    """A cloud channel kind of the matrix: its channel (type, settings, the fake serving it
    and the path under the fake's URL), the model clients ask for and its upstream id, what
    its upstream body holds beside an image's base64 and beside a tool result, and how its fake is made to
    answer with a call of ``get_weather``."""

    name: str
    channel_type: str
    fake: str
    base_path: str
    settings: JSON
    model: str
    upstream_model: str
    image_marker: str
    tool_result_markers: tuple[str, ...]
    call_tool: Callable[[Any, bool], None]


def _azure_calls(fake: Any, on: bool) -> None:
    call = {"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": orjson.dumps(CITY).decode()}}
    fake.tool_call = call if on else None


def _bedrock_calls(fake: Any, on: bool) -> None:
    fake.tool_use = {"name": "get_weather", "input": CITY} if on else None


def _gemini_calls(fake: Any, on: bool) -> None:
    fake.gemini.function_call = {"name": "get_weather", "args": CITY} if on else None


def _claude_calls(fake: Any, on: bool) -> None:
    fake.claude.tool_uses = [{"id": "toolu_m1", "name": "get_weather", "input": CITY}] if on else None


VERTEX = {"project": "proj-test", "location": "europe-west4"}
KINDS = {
    kind.name: kind
    for kind in (
        Kind("azure", "azure", "azure", "/openai/", {"path_style": "deployments"}, "m-azure", "chat-dep",
             'data:image/png;base64,', ('"role":"tool"', '"type":"function_call_output"'), _azure_calls),
        Kind("bedrock", "bedrock", "bedrock", "", {"region": "us-east-1"}, "m-bedrock", "amazon.nova-pro-v1:0",
             '"format":"png","source":{"bytes":', ('"toolResult"',), _bedrock_calls),
        Kind("vertex-gemini", "vertex", "vertex", "/v1/", VERTEX, "m-vertex-gemini", "gemini-2.5-flash",
             '"inlineData":{', ('"functionResponse"',), _gemini_calls),
        Kind("vertex-claude", "vertex", "vertex", "/v1/", VERTEX, "m-vertex-claude", "claude-sonnet-4-5@20250929",
             '"media_type":"image/png"', ('"type":"tool_result"',), _claude_calls),
    )  # fmt: skip
}


@attrs.frozen
class Direct:
    """The direct channel that backs a kind up for failover: its type (and the fake
    serving it), the model's id there and, when it is not the kind's own model, the same
    model's id on the cloud channel (Bedrock's Nova has no direct provider: Claude it is)."""

    channel_type: str
    upstream_model: str
    cloud_model: str | None = None


DIRECT = {
    "azure": Direct("openai", "gpt-4o-mini"),
    "bedrock": Direct("anthropic", "claude-sonnet-4-5-20250929", BEDROCK_CLAUDE),
    "vertex-gemini": Direct("gemini", "gemini-2.5-flash"),
    "vertex-claude": Direct("anthropic", "claude-sonnet-4-5-20250929"),
}


def error_model(kind: Kind, protocol: str) -> str:
    """The model of a cell's error test: served by a channel of its own (an upstream 429
    cools a channel down, a 5xx counts towards its breaker)."""
    return f"{kind.model}-err-{protocol}"


def failover_model(kind: Kind, protocol: str) -> str:
    """The model of a cell's failover test: served by a channel of the kind (priority 10)
    and by a direct one (priority 0), both its own."""
    return f"{kind.model}-fo-{protocol}"


@attrs.define
class World:
    gateway: GatewayThread
    seed: Seed
    secret: str
    user_id: int
    upstreams: dict[str, FakeUpstream]

    def fake(self, kind: Kind) -> Any:
        return self.upstreams[kind.fake]

    def sent(self, kind: Kind) -> str:
        """The body of the last request the kind's fake received, as compact JSON."""
        return orjson.dumps(self.fake(kind).requests[-1]["body"]).decode()

    def last_row(self) -> JSON:
        return self.seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]

    def assert_billed(self, model: str, channel: str, tokens: tuple[int, int] | None = None) -> JSON:
        """The last request's usage row: the model, the channel, status 200, its tokens (the
        ones the client was told, when given) and its cost exact in micro-USD from the price;
        the ledger captured that cost once."""
        row = self.last_row()
        assert (row["model"], row["channel_name"], row["status"]) == (model, channel, 200), row
        assert row["input_tokens"] > 0 and row["output_tokens"] > 0, row
        if tokens is not None:
            assert (row["input_tokens"], row["output_tokens"]) == tokens
        assert row["cost_micros"] == expected_cost(row["input_tokens"], row["output_tokens"]) > 0
        assert ledger_of(self.seed, row["request_id"]) == [("capture", -row["cost_micros"])]
        return row
