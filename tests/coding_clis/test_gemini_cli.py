"""The real Gemini CLI (``gemini -p``) against the gateway on a gemini channel (same
protocol), an openai channel (chat completions) and an anthropic channel (both
converted), with fake upstreams on loopback (``conftest``). Skipped when the Gemini CLI is
not installed: ``make coding-clis`` (or ``RELAYGATE_GEMINI_CLI`` naming its binary).

The Gemini CLI keeps to itself (usage statistics, telemetry, update checks and the IDE
companion off, in the settings of a temporary HOME), trusts the test's folder, and calls
the gateway with ``GOOGLE_GEMINI_BASE_URL`` and ``GEMINI_API_KEY``. With ``-m`` naming
the model: a one-shot turn, and a tool round trip: the fake asks for the CLI's own
``read_file`` (read-only, so it runs without asking in non-interactive mode) on a file of
the test's, the CLI reads it and sends it back, and the upstream receives it in its own
wire format (a ``functionResponse`` part, a ``tool`` message, a ``tool_result`` block).
Without ``-m``: its routing call (JSON output of a schema) answered once, then the turn
on the model it routed to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

CLAUDE, GPT, GEMINI = "claude-sonnet-4-6", "gpt-4o-gemini-cli", "gemini-2.5-flash"
SETTINGS = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "ide": {"enabled": False},
}


@pytest.fixture
def world_models() -> tuple[str, str, str]:
    return (CLAUDE, GPT, GEMINI)


@pytest.fixture
def binary(cli_binary) -> str:
    """The CLI (the test is skipped without it, before anything starts)."""
    return cli_binary("gemini", "RELAYGATE_GEMINI_CLI")


@pytest.fixture
def gemini(binary, run_cli, start_gateway, world):
    """``await gemini(folder, model, prompt)``: ``gemini -p`` against the gateway (``-m model`` unless ``None``), its JSON output."""
    gateway = start_gateway()

    async def run(folder: Path, model: str | None, prompt: str) -> dict[str, Any]:
        (folder / ".gemini").mkdir(exist_ok=True)
        (folder / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
        env = {"GOOGLE_GEMINI_BASE_URL": gateway.url, "GEMINI_API_KEY": world.secret, "GEMINI_CLI_TRUST_WORKSPACE": "true",
               "GEMINI_TELEMETRY_ENABLED": "false"}  # fmt: skip
        output: dict[str, Any] = json.loads((await run_cli([binary, "-p", prompt, *(["-m", model] if model else []), "--output-format", "json"], folder, env))[0])
        assert "error" not in output, output
        return output

    return run


@pytest.mark.parametrize("model", [GEMINI, GPT, CLAUDE])
async def test_gemini_cli_one_shot(gemini, world, tmp_path, model):
    output = await gemini(tmp_path, model, "say hello to the gateway")
    assert output["response"].startswith("echo: ") and output["response"].endswith("say hello to the gateway"), output["response"]
    assert len(world.fakes[model].requests) == 1
    world.assert_billed_once_per_call(model)


@pytest.mark.parametrize("model", [GEMINI, GPT, CLAUDE])
async def test_gemini_cli_tool_round_trip(gemini, world, tmp_path, model):
    note = tmp_path / "note.txt"
    note.write_text(world.note + "\n")
    fake = world.fakes[model]
    fake.ask = ("read_file", {"file_path": str(note)})
    output = await gemini(tmp_path, model, "read note.txt, please")
    assert len(fake.requests) == 2 and output["stats"]["tools"]["byName"]["read_file"]["success"] == 1, output
    second = fake.requests[1]["body"]
    if model == GEMINI:  # a functionResponse part answering the model's functionCall, with the CLI's id
        calls = [p["functionCall"] for c in second["contents"] for p in c["parts"] if "functionCall" in p]
        responses = [p["functionResponse"] for c in second["contents"] for p in c["parts"] if "functionResponse" in p]
        assert len(calls) == 1 and calls[0]["name"] == "read_file"
        assert len(responses) == 1 and responses[0]["name"] == "read_file" and responses[0]["id"] == calls[0]["id"]
        assert world.note in json.dumps(responses[0]["response"])
    elif model == GPT:  # a tool message answering the assistant's tool call
        calls = [m for m in second["messages"] if m.get("tool_calls")]
        tools = [m for m in second["messages"] if m["role"] == "tool"]
        assert len(calls) == 1 and calls[0]["tool_calls"][0]["id"] == "call_rg1" and calls[0]["tool_calls"][0]["function"]["name"] == "read_file"
        assert len(tools) == 1 and tools[0]["tool_call_id"] == "call_rg1" and world.note in json.dumps(tools[0]["content"])
    else:  # a tool_result block for the fake's tool_use, in the last user message
        call = second["messages"][-2]["content"][-1]
        assert call["type"] == "tool_use" and call["id"] == "toolu_rg1" and call["name"] == "read_file"
        results = [b for b in second["messages"][-1]["content"] if b.get("type") == "tool_result"]
        assert len(results) == 1 and results[0]["tool_use_id"] == "toolu_rg1" and world.note in json.dumps(results[0]["content"])
    assert output["response"].startswith("echo: read_file gave ") and world.note in output["response"]  # the fake echoes the result
    world.assert_billed_once_per_call(model)


# Without -m, Gemini CLI 0.61.0 asks its router model to rate the prompt (a generateContent
# call for JSON output of a schema), then calls the model a simple prompt is routed to.
ROUTER, ROUTED = "gemini-3.5-flash-lite", "gemini-3.8-flash"
COMPLEXITY = '{"complexity_reasoning": "a greeting", "complexity_score": 5}'


@pytest.fixture
def routed(world, model):
    """The router's and the routed model on a second channel of ``model``'s type and fake, which answers the router in JSON."""
    world.serve(model, ROUTER, ROUTED)
    world.fakes[model].json_answer = COMPLEXITY


@pytest.mark.parametrize("model", [GEMINI, GPT, CLAUDE])
async def test_gemini_cli_without_a_model_asks_its_router_first(routed, gemini, world, tmp_path, model):
    output = await gemini(tmp_path, None, "say hello to the gateway")
    assert output["response"].startswith("echo: ") and output["response"].endswith("say hello to the gateway"), output["response"]
    router, turn = (r["body"] for r in world.fakes[model].requests)  # one routing call (no retries), then the turn
    if model == GEMINI:
        assert router["generationConfig"]["responseMimeType"] == "application/json" and "responseJsonSchema" in router["generationConfig"]
    elif model == GPT:  # the schema as OpenAI's structured output
        assert router["response_format"]["type"] == "json_schema" and "complexity_score" in json.dumps(router["response_format"])
    else:  # the schema as Anthropic's structured output
        assert router["output_config"]["format"]["type"] == "json_schema" and "complexity_score" in json.dumps(router["output_config"])
    assert "say hello to the gateway" in json.dumps(turn)
    world.assert_billed_once_per_call(model, row_models=[ROUTER, ROUTED])
