"""The real Codex CLI (``codex exec``) against the gateway over the Responses
WebSocket transport, on loopback with fake upstreams: an OpenAI channel that
speaks Responses, Anthropic and Gemini channels (converted). Skipped when the CLI is not
installed: ``make coding-clis`` (or ``RELAYGATE_CODEX`` naming its
binary). Codex is told to keep to itself (no analytics, no update check, no
plugins) and its provider points at the gateway with ``supports_websockets``. A
one-shot turn, and a tool round trip: the fake asks for ``exec_command``, Codex runs
it and sends its output on the same connection by ``previous_response_id`` with only
the new item, and the gateway sends the upstream the whole conversation."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import attrs
import pytest
from aiohttp import web

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_gemini.fake_upstream import EXPECTED_KEY as GEMINI_KEY
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI
from gateway_openai.responses_socket import ResponsesSocket

GPT, CLAUDE, GEMINI = "gpt-codex-ws", "claude-codex-ws", "gemini-codex-ws"
INSTALLED = Path(__file__).resolve().parents[3] / ".venv" / "coding-clis" / "node_modules" / ".bin" / "codex"  # make coding-clis
CODEX = os.environ.get("RELAYGATE_CODEX") or (str(INSTALLED) if INSTALLED.exists() else shutil.which("codex"))

pytestmark = pytest.mark.skipif(CODEX is None, reason="the Codex CLI is not installed (make coding-clis)")

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


COMMAND = {"cmd": "echo relaygate-tool-ran"}


@attrs.define
class OpenAIAskingOnce(FakeOpenAI):
    """Asks for ``exec_command`` until the input carries a function call's output."""

    async def responses(self, request: web.Request) -> web.StreamResponse:
        items = (await request.json()).get("input") or []
        answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items)
        self.tool_call = None if answered else {"id": "call_rg1", "function": {"name": "exec_command", "arguments": json.dumps(COMMAND)}}
        return await super().responses(request)


@attrs.define
class AnthropicAskingOnce(FakeAnthropic):
    """Asks for ``exec_command`` until the last message carries a tool result."""

    async def messages(self, request: web.Request) -> web.StreamResponse:
        content = ((await request.json()).get("messages") or [{}])[-1].get("content")
        answered = isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        self.tool_uses = None if answered else [{"id": "toolu_rg1", "name": "exec_command", "input": COMMAND}]
        return await super().messages(request)


@pytest.fixture
async def claude(fake_upstream) -> FakeAnthropic:
    return await fake_upstream(FakeAnthropic())


@pytest.fixture
async def gemini(fake_upstream) -> FakeGemini:
    return await fake_upstream(FakeGemini())


@pytest.fixture
def secret(seed, upstream, claude, gemini) -> str:
    seed.channel("native", type="openai", base_url=upstream.url, models=[GPT], settings={"responses": True})
    seed.channel("claude", type="anthropic", base_url=claude.url, models=[CLAUDE], api_keys=(ANTHROPIC_KEY,))
    seed.channel("gemini", type="gemini", base_url=gemini.url + "/v1beta", models=[GEMINI], api_keys=(GEMINI_KEY,))
    return seed.key(seed.user("alice", balance_usd=10))[1]


async def run_codex(gateway, secret: str, tmp_path, model: str, prompt: str) -> tuple[str, str]:
    """``codex exec PROMPT`` against the gateway; its stdout and stderr (it must succeed)."""
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(CONFIG.format(model=model, url=gateway.url))
    env = {
        "PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "CODEX_HOME": str(home), "RELAYGATE_TEST_KEY": secret,
        "RUST_LOG": "codex_api=info,codex_core=info", "NO_COLOR": "1",
    }  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        str(CODEX), "exec", "--skip-git-repo-check", "--disable", "plugins", prompt,
        cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(), 120)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    assert process.returncode == 0, stdout[-2000:] + stderr[-4000:]
    # Codex's own log: the WebSocket transport (101), not its HTTP fallback
    assert "successfully connected to Responses WebSocket status=101" in stderr, stderr[-4000:]
    assert "to http" not in stderr.lower(), stderr[-4000:]
    return stdout, stderr


@pytest.mark.parametrize("model", [GPT, CLAUDE, GEMINI])
async def test_codex_exec_runs_a_turn_over_the_websocket(start_gateway, secret, seed, upstream, claude, gemini, tmp_path, model):
    stdout, _ = await run_codex(start_gateway(), secret, tmp_path, model, "say hello to the gateway")
    assert "say hello to the gateway" in stdout, stdout[-2000:]  # the fakes echo the user's words
    rows = seed.rows("SELECT status, channel_id, end_reason FROM usage_logs WHERE endpoint = 'responses' ORDER BY id")
    # its warm-up (generate: false, answered without a model call), then the turn built on it by id
    assert [(r["status"], r["end_reason"]) for r in rows] == [(200, "done"), (200, "done")] and rows[0]["channel_id"] is None, rows
    served = {GPT: upstream, CLAUDE: claude, GEMINI: gemini}[model].requests
    assert len(served) == 1 and "say hello to the gateway" in str(served[0]["body"])
    assert "previous_response_id" not in served[0]["body"]


@pytest.mark.parametrize("model", [GPT, CLAUDE])
async def test_codex_tool_round_trip_over_the_websocket(start_gateway, seed, fake_upstream, tmp_path, model, monkeypatch):
    sent: list[dict] = []  # what Codex sent on the connection (observed, not changed)
    original = ResponsesSocket.request
    monkeypatch.setattr(ResponsesSocket, "request", lambda self, text: sent.append(json.loads(text)) or original(self, text))
    asking_openai = await fake_upstream(OpenAIAskingOnce())
    asking_claude = await fake_upstream(AnthropicAskingOnce())
    seed.channel("native", type="openai", base_url=asking_openai.url, models=[GPT], settings={"responses": True})
    seed.channel("claude", type="anthropic", base_url=asking_claude.url, models=[CLAUDE], api_keys=(ANTHROPIC_KEY,))
    secret = seed.key(seed.user("alice", balance_usd=10))[1]
    await run_codex(start_gateway(), secret, tmp_path, model, "run the command, please")
    rows = seed.rows("SELECT status, end_reason FROM usage_logs WHERE endpoint = 'responses' ORDER BY id")
    assert [(r["status"], r["end_reason"]) for r in rows] == [(200, "done")] * 3, rows  # warm-up, the call, the answer
    # Codex's way: its warm-up, then each request names the last response and sends only what is new
    assert [m.get("generate") for m in sent] == [False, None, None] and all(m["store"] is False for m in sent)
    assert sent[1]["previous_response_id"] and sent[2]["previous_response_id"] and sent[1]["previous_response_id"] != sent[2]["previous_response_id"]
    assert [item["type"] for item in sent[2]["input"]] == ["function_call_output"]
    if model == GPT:
        first, second = (r["body"] for r in asking_openai.requests)
        kinds = [item.get("type") for item in second["input"]]
        assert "previous_response_id" not in second and kinds[: len(first["input"])] == [i.get("type") for i in first["input"]]
        call, output = second["input"][-2], second["input"][-1]
        assert call["type"] == "function_call" and call["name"] == "exec_command" and output["type"] == "function_call_output"
        assert output["call_id"] == call["call_id"] == "call_rg1"
    else:
        first, second = (r["body"] for r in asking_claude.requests)
        assert [m["role"] for m in second["messages"]][-2:] == ["assistant", "user"]
        assert second["messages"][-2]["content"][-1]["type"] == "tool_use" and second["messages"][-2]["content"][-1]["name"] == "exec_command"
        assert any(b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_rg1" for b in second["messages"][-1]["content"])
