"""The real Codex CLI (``codex exec``) against the gateway over the Responses WebSocket
transport, on an openai channel that speaks Responses (same protocol), an anthropic and
a gemini channel (converted), with fake upstreams on loopback (``conftest``). Skipped when
Codex is not installed: ``make coding-clis`` (or ``RELAYGATE_CODEX`` naming its binary).

Codex keeps to itself (no analytics, no update check, no plugins) and its provider points
at the gateway with ``supports_websockets``. A one-shot turn, and a tool round trip: the
fake asks for ``exec_command`` (``cat note.txt``), Codex runs it and sends its output on
the same connection by ``previous_response_id`` with only the new item, and the gateway
sends the upstream the whole conversation, the output in the upstream's own wire format
(a ``function_call_output`` item, a ``tool_result`` block, a ``functionResponse`` part)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway_openai.responses_socket import ResponsesSocket

CLAUDE, GPT, GEMINI = "claude-codex-ws", "gpt-codex-ws", "gemini-codex-ws"
CONFIG = """
model = "{model}"
model_provider = "relaygate"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.relaygate]
name = "relaygate"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "RELAYGATE_TEST_KEY"
supports_websockets = true
request_max_retries = 0
stream_max_retries = 0
"""
COMMAND = {"cmd": "cat note.txt"}


@pytest.fixture
def world_models() -> tuple[str, str, str]:
    return (CLAUDE, GPT, GEMINI)


@pytest.fixture
def world_openai_settings() -> dict[str, Any]:
    return {"responses": True}


@pytest.fixture
def sent(monkeypatch) -> list[dict[str, Any]]:
    """What Codex sent on the WebSocket (observed, not changed)."""
    frames: list[dict[str, Any]] = []
    original = ResponsesSocket.request
    monkeypatch.setattr(ResponsesSocket, "request", lambda self, text: frames.append(json.loads(text)) or original(self, text))
    return frames


@pytest.fixture
def binary(cli_binary) -> str:
    """The CLI (the test is skipped without it, before anything starts)."""
    return cli_binary("codex", "RELAYGATE_CODEX")


@pytest.fixture
def codex(binary, run_cli, start_gateway, world):
    """``await codex(folder, model, prompt)``: ``codex exec`` against the gateway, its last message."""
    gateway = start_gateway()

    async def run(folder: Path, model: str, prompt: str) -> str:
        home = folder / "codex-home"
        home.mkdir(exist_ok=True)
        (home / "config.toml").write_text(CONFIG.format(model=model, url=gateway.url))
        env = {"CODEX_HOME": str(home), "RELAYGATE_TEST_KEY": world.secret, "RUST_LOG": "codex_api=info,codex_core=info"}
        argv = [binary, "exec", "--skip-git-repo-check", "--disable", "plugins", "-o", str(folder / "last.txt"), prompt]
        _, stderr = await run_cli(argv, folder, env, timeout=120)
        # Codex's own log: the WebSocket transport (101), not its HTTP fallback
        assert "successfully connected to Responses WebSocket status=101" in stderr, stderr[-4000:]
        assert "to http" not in stderr.lower(), stderr[-4000:]
        return (folder / "last.txt").read_text()

    return run


@pytest.mark.parametrize("model", [GPT, CLAUDE, GEMINI])
async def test_codex_one_shot_over_the_websocket(codex, world, sent, tmp_path, model):
    answer = await codex(tmp_path, model, "say hello to the gateway")
    assert answer.startswith("echo: ") and answer.strip().endswith("say hello to the gateway"), answer  # the fakes echo the user
    # its warm-up (generate: false, answered without a model call), then the turn built on it by id
    assert [m.get("generate") for m in sent] == [False, None] and sent[1]["previous_response_id"]
    served = world.fakes[model].requests
    assert len(served) == 1 and "previous_response_id" not in served[0]["body"]
    world.assert_billed_once_per_call(model, answered_by_gateway=1)


@pytest.mark.parametrize("model", [GPT, CLAUDE, GEMINI])
async def test_codex_tool_round_trip_over_the_websocket(codex, world, sent, tmp_path, model):
    (tmp_path / "note.txt").write_text(world.note + "\n")
    fake = world.fakes[model]
    fake.ask = ("exec_command", COMMAND)
    answer = await codex(tmp_path, model, "show me note.txt, please")
    assert answer.startswith("echo: exec_command gave ") and world.note in answer, answer  # the fake echoes the output it got
    # Codex's way: its warm-up, then each request names the last response and sends only what is new
    assert [m.get("generate") for m in sent] == [False, None, None] and all(m["store"] is False for m in sent)
    assert sent[1]["previous_response_id"] and sent[2]["previous_response_id"] and sent[1]["previous_response_id"] != sent[2]["previous_response_id"]
    assert [item["type"] for item in sent[2]["input"]] == ["function_call_output"]
    first, second = (r["body"] for r in fake.requests)
    if model == GPT:  # the whole conversation again, the call and its output last
        assert "previous_response_id" not in second and [i.get("type") for i in second["input"][: len(first["input"])]] == [i.get("type") for i in first["input"]]
        call, output = second["input"][-2], second["input"][-1]
        assert call["type"] == "function_call" and call["name"] == "exec_command" and output["type"] == "function_call_output"
        assert output["call_id"] == call["call_id"] == "call_rg1" and world.note in output["output"]
    elif model == CLAUDE:  # a tool_result block for the fake's tool_use
        assert [m["role"] for m in second["messages"]][-2:] == ["assistant", "user"]
        call = second["messages"][-2]["content"][-1]
        assert call["type"] == "tool_use" and call["name"] == "exec_command" and call["id"] == "toolu_rg1"
        results = [b for b in second["messages"][-1]["content"] if b.get("type") == "tool_result"]
        assert len(results) == 1 and results[0]["tool_use_id"] == "toolu_rg1" and world.note in json.dumps(results[0]["content"])
    else:  # a functionResponse part answering the model's functionCall
        call, output = second["contents"][-2], second["contents"][-1]
        assert call["role"] == "model" and call["parts"][-1]["functionCall"]["name"] == "exec_command"
        response = output["parts"][0]["functionResponse"]
        assert output["role"] == "user" and response["name"] == "exec_command" and world.note in json.dumps(response["response"])
    world.assert_billed_once_per_call(model, answered_by_gateway=1)
