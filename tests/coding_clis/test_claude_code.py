"""The real Claude Code CLI (``claude -p``) against the gateway on an anthropic channel
(same protocol), an openai channel (chat completions) and a gemini channel (both
converted), with fake upstreams on loopback (``conftest``). Skipped when Claude Code is not
installed: ``make coding-clis`` (or ``RELAYGATE_CLAUDE`` naming its binary).

Claude Code keeps to itself (no telemetry, updates, error reports or other
non-essential traffic), reads its settings from the test's folder, and calls the
gateway with ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY``. A one-shot turn, and a
tool round trip: the fake asks for Claude Code's own ``Read`` on a file of the test's,
Claude Code reads it and sends it back, and the upstream receives it in its own wire
format (a ``tool_result`` block, a ``tool`` message, a ``functionResponse`` part)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# Unknown model names (not Claude's) make Claude Code send its agent list as a system
# message after the user's turn (its mid-conversation system): the openai and gemini channels get it.
CLAUDE, GPT, GEMINI = "claude-sonnet-4-6", "gpt-4o-claude-code", "gemini-2.5-flash-claude-code"
AGENTS = "Available agent types for the Agent tool:"
QUIET = {  # everything Claude Code does besides calling the API, off
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "DISABLE_UPDATES": "1", "DISABLE_GROWTHBOOK": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1", "DISABLE_INSTALLATION_CHECKS": "1", "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1", "DISABLE_AUTO_COMPACT": "1",
}  # fmt: skip


@pytest.fixture
def world_models() -> tuple[str, str, str]:
    return (CLAUDE, GPT, GEMINI)


@pytest.fixture
def binary(cli_binary) -> str:
    """The CLI (the test is skipped without it, before anything starts)."""
    return cli_binary("claude", "RELAYGATE_CLAUDE")


@pytest.fixture
def claude(binary, run_cli, start_gateway, world):
    """``await claude(folder, model, prompt, *options)``: ``claude -p`` against the gateway, its JSON
    result; the key in ``ANTHROPIC_API_KEY`` (sent as ``x-api-key``) unless ``key_variable`` names another."""
    gateway = start_gateway()

    async def run(folder: Path, model: str, prompt: str, *options: str, key_variable: str = "ANTHROPIC_API_KEY") -> dict[str, Any]:
        env = {"CLAUDE_CONFIG_DIR": str(folder / ".claude-home"), "ANTHROPIC_BASE_URL": gateway.url, key_variable: world.secret,
               "ANTHROPIC_SMALL_FAST_MODEL": model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": model, **QUIET}  # fmt: skip
        argv = [binary, "-p", prompt, "--model", model, "--output-format", "json", "--max-turns", "4", *options]
        result: dict[str, Any] = json.loads((await run_cli(argv, folder, env))[0])
        assert result["is_error"] is False and result["subtype"] == "success", result
        return result

    return run


@pytest.mark.parametrize("model", [CLAUDE, GPT, GEMINI])
async def test_claude_code_one_shot(claude, world, tmp_path, model):
    result = await claude(tmp_path, model, "say hello to the gateway")
    # the fakes echo the user's last words: the prompt is last, no system text after it
    assert result["result"].startswith("echo: ") and result["result"].endswith("say hello to the gateway"), result["result"]
    assert result["num_turns"] == 1 and len(world.fakes[model].requests) == 1
    body = world.fakes[model].requests[0]["body"]
    if model == CLAUDE:  # on Claude's names the agent list is in the user's turn
        assert AGENTS in json.dumps(body["messages"][0]) and [m["role"] for m in body["messages"]] == ["user"]
    elif model == GPT:  # its mid-conversation system message stays a system message, in place
        assert [m["role"] for m in body["messages"]][-2:] == ["user", "system"] and body["messages"][-1]["content"].startswith(AGENTS)
    else:  # it joins the system instruction, after the top-level system
        assert body["systemInstruction"]["parts"][-1]["text"].startswith(AGENTS) and AGENTS not in json.dumps(body["contents"])
    world.assert_billed_once_per_call(model)


async def test_claude_code_with_an_auth_token(claude, world, tmp_path):
    """``ANTHROPIC_AUTH_TOKEN``: the key as ``Authorization: Bearer``, as gateways are usually told."""
    result = await claude(tmp_path, GEMINI, "say hello to the gateway", key_variable="ANTHROPIC_AUTH_TOKEN")
    assert result["result"].endswith("say hello to the gateway")
    world.assert_billed_once_per_call(GEMINI)


@pytest.mark.parametrize("model", [CLAUDE, GPT, GEMINI])
async def test_claude_code_tool_round_trip(claude, world, tmp_path, model):
    note = tmp_path / "note.txt"
    note.write_text(world.note + "\n")
    fake = world.fakes[model]
    fake.ask = ("Read", {"file_path": str(note)})
    result = await claude(tmp_path, model, "read note.txt, please", "--allowedTools", "Read")
    assert result["num_turns"] == 2 and len(fake.requests) == 2, result
    second = fake.requests[1]["body"]
    if model == CLAUDE:  # a tool_result block for the fake's tool_use, in the last user message
        call = second["messages"][-2]["content"][-1]
        assert call["type"] == "tool_use" and call["id"] == "toolu_rg1" and call["name"] == "Read"
        results = [b for b in second["messages"][-1]["content"] if b.get("type") == "tool_result"]
        assert len(results) == 1 and results[0]["tool_use_id"] == "toolu_rg1" and world.note in json.dumps(results[0]["content"])
    elif model == GPT:  # a tool message answering the assistant's tool call
        calls = [m for m in second["messages"] if m.get("tool_calls")]
        tools = [m for m in second["messages"] if m["role"] == "tool"]
        assert len(calls) == 1 and calls[0]["tool_calls"][0]["id"] == "call_rg1" and calls[0]["tool_calls"][0]["function"]["name"] == "Read"
        assert len(tools) == 1 and tools[0]["tool_call_id"] == "call_rg1" and world.note in json.dumps(tools[0]["content"])
    else:  # a functionResponse part answering the model's functionCall
        calls = [p for c in second["contents"] for p in c["parts"] if "functionCall" in p]
        responses = [p["functionResponse"] for c in second["contents"] for p in c["parts"] if "functionResponse" in p]
        assert len(calls) == 1 and calls[0]["functionCall"]["name"] == "Read"
        assert len(responses) == 1 and responses[0]["name"] == "Read" and world.note in json.dumps(responses[0]["response"])
    assert result["result"].startswith("echo: Read gave ") and world.note in result["result"]  # the fake echoes the result it got
    world.assert_billed_once_per_call(model)
