"""The real Codex CLI (``codex exec``) against the gateway over the Responses
WebSocket transport, on loopback with fake upstreams: an OpenAI channel that
speaks Responses and an Anthropic channel (converted). Skipped when the CLI is not
installed: ``npm install -g @openai/codex`` (or ``RELAYGATE_CODEX`` naming its
binary). Codex is told to keep to itself (no analytics, no update check, no
plugins) and its provider points at the gateway with ``supports_websockets``."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic

GPT, CLAUDE = "gpt-codex-ws", "claude-codex-ws"
CODEX = os.environ.get("RELAYGATE_CODEX") or shutil.which("codex")

pytestmark = pytest.mark.skipif(CODEX is None, reason="the Codex CLI is not installed (npm install -g @openai/codex)")

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


@pytest.fixture
async def claude(fake_upstream) -> FakeAnthropic:
    return await fake_upstream(FakeAnthropic())


@pytest.fixture
def secret(seed, upstream, claude) -> str:
    seed.channel("native", type="openai", base_url=upstream.url, models=[GPT], settings={"responses": True})
    seed.channel("claude", type="anthropic", base_url=claude.url, models=[CLAUDE], api_keys=(ANTHROPIC_KEY,))
    return seed.key(seed.user("alice", balance_usd=10))[1]


@pytest.mark.parametrize("model", [GPT, CLAUDE])
async def test_codex_exec_runs_a_turn_over_the_websocket(start_gateway, secret, seed, upstream, claude, tmp_path, model):
    gateway = start_gateway()
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG.format(model=model, url=gateway.url))
    env = {
        "PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "CODEX_HOME": str(home), "RELAYGATE_TEST_KEY": secret,
        "RUST_LOG": "codex_api=info,codex_core=info", "NO_COLOR": "1",
    }  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        str(CODEX), "exec", "--skip-git-repo-check", "--disable", "plugins", "say hello to the gateway",
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
    assert "say hello to the gateway" in stdout, stdout[-2000:]  # the fakes echo the user's words
    # Codex's own log: the WebSocket transport (101), not its HTTP fallback
    assert "successfully connected to Responses WebSocket status=101" in stderr, stderr[-4000:]
    assert "to http" not in stderr.lower(), stderr[-4000:]
    rows = seed.rows("SELECT status, channel_id, end_reason FROM usage_logs WHERE endpoint = 'responses' ORDER BY id")
    # its warm-up (generate: false, answered without a model call), then the turn built on it by id
    assert [(r["status"], r["end_reason"]) for r in rows] == [(200, "done"), (200, "done")] and rows[0]["channel_id"] is None, rows
    served = upstream.requests if model == GPT else claude.requests
    assert len(served) == 1 and "say hello to the gateway" in str(served[0]["body"])
    assert "previous_response_id" not in served[0]["body"]
