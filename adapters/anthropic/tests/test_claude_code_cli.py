"""The real Claude Code CLI (``claude -p``) against the gateway, on loopback with fake
upstreams: an anthropic channel (same protocol), an openai channel (chat completions)
and a gemini channel (both converted). Skipped when the CLI is not installed: ``make
coding-clis`` (or ``RELAYGATE_CLAUDE`` naming its binary).

Claude Code is told to keep to itself (no telemetry, updates, error reports or other
non-essential traffic; a proxy on a closed loopback port for anything but the
gateway), reads its settings from a temporary folder, and calls the gateway with
``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY``. A one-shot turn, and a tool round
trip: the fake asks for Claude Code's own ``Read`` tool on a file of the test's, Claude
Code reads it and sends the file back, and the upstream must receive it in its own wire
format (a ``tool_result`` block, a ``tool`` message, a ``functionResponse`` part). Each
upstream call is one usage row, billed exactly what the fake reported."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from aiohttp import web

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.billing.testing import INPUT, OUTPUT, expected_cost
from gateway_core.testing import free_port
from gateway_gemini.fake_upstream import EXPECTED_KEY as GEMINI_KEY
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI, stream_chunks, usage_for

# The model names Claude Code sees. An unknown name (not a Claude model's) makes it send
# its agent list as a system message after the user's turn (its mid-conversation system).
CLAUDE, GPT, GEMINI = "claude-sonnet-4-6", "gpt-4o-claude-code", "gemini-2.5-flash-claude-code"
INSTALLED = Path(__file__).resolve().parents[3] / ".venv" / "coding-clis" / "node_modules" / ".bin" / "claude"  # make coding-clis
CLAUDE_CODE = os.environ.get("RELAYGATE_CLAUDE") or (str(INSTALLED) if INSTALLED.exists() else shutil.which("claude"))

pytestmark = pytest.mark.skipif(CLAUDE_CODE is None, reason="Claude Code is not installed (make coding-clis)")

NOTE = "relaygate-note-7f3a: the answer is forty-two"  # the file the fake asks Claude Code to read
QUIET = {  # everything Claude Code does besides calling the API, off
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "DISABLE_UPDATES": "1", "DISABLE_GROWTHBOOK": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1", "DISABLE_INSTALLATION_CHECKS": "1", "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1", "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1", "DISABLE_AUTO_COMPACT": "1",
}  # fmt: skip


class Recorded:
    """Keeps what a fake answered beside what it received (``answers``: the JSON body, or the stream's chunks)."""

    __slots__ = ()
    answers: list[Any]

    def answer(self, payload: Any, fault: Any = None) -> web.Response:
        self.answers.append(payload)
        return super().answer(payload, fault)  # type: ignore[misc]

    async def stream(self, request: web.Request, chunks: Any, fault: Any, **options: Any) -> web.StreamResponse:
        chunks = list(chunks)
        self.answers.append(chunks)
        return await super().stream(request, chunks, fault, **options)  # type: ignore[misc]


def gave(name: str, result: Any) -> str:
    """How the fakes answer a tool's result (the Gemini fake's own words): the CLI prints it."""
    return f"echo: {name} gave {json.dumps(result)}"


@attrs.define
class Claude(Recorded, FakeAnthropic):
    """Asks for ``Read`` (when ``read`` names a file) until the last message carries a tool result, then echoes that."""

    read: str | None = None
    answers: list[Any] = attrs.field(factory=list)

    def answer_blocks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        content = (body.get("messages") or [{}])[-1].get("content")
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(content, list) else []
        self.tool_uses = None if results or not self.read else [{"id": "toolu_rg1", "name": "Read", "input": {"file_path": self.read}}]
        blocks = super().answer_blocks(body)
        return [{"type": "text", "text": gave("Read", results[-1]["content"])} if b["type"] == "text" and results else b for b in blocks]


@attrs.define
class OpenAI(Recorded, FakeOpenAI):
    """Asks for ``Read`` (when ``read`` names a file) until a tool message comes, then echoes that."""

    read: str | None = None
    answers: list[Any] = attrs.field(factory=list)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        results = [m for m in body.get("messages") or [] if m.get("role") == "tool"]
        arguments = json.dumps({"file_path": self.read})
        self.tool_call = None if results or not self.read else {"id": "call_rg1", "type": "function", "function": {"name": "Read", "arguments": arguments}}
        if not results or not body.get("stream"):
            return await super().chat(request)
        fault, refusal = await self.admit(request, body)  # the fake's own stream, with the result's echo for its text
        if refusal is not None:
            return refusal
        text = gave("Read", results[-1]["content"])
        include_usage = (body.get("stream_options") or {}).get("include_usage") is True
        chunks = [b"data: " + orjson.dumps(c) + b"\n\n" for c in stream_chunks(body, text, usage_for(body, text), include_usage, None)]
        return await self.stream(request, chunks, fault, end=b"data: [DONE]\n\n")


@attrs.define
class Gemini(Recorded, FakeGemini):
    """Asks for ``Read`` (when ``read`` names a file) until a functionResponse comes (the fake echoes that)."""

    read: str | None = None
    answers: list[Any] = attrs.field(factory=list)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        contents = (await request.json()).get("contents") or []
        answered = any("functionResponse" in part for c in contents for part in c.get("parts") or [])
        self.function_call = None if answered or not self.read else {"name": "Read", "args": {"file_path": self.read}}
        return await super().dispatch(request)


def reported_usage(fake: Any, answer: Any) -> tuple[int, int]:
    """The (input, output) tokens a fake reported in its answer, read from its own wire."""
    events = [json.loads(chunk.split(b"data: ", 1)[1]) for chunk in answer if b"data: {" in chunk] if isinstance(answer, list) else [answer]
    if isinstance(fake, FakeAnthropic):
        start = next(e["message"]["usage"] for e in events if e.get("type") in ("message_start", "message"))
        end = [e["usage"] for e in events if e.get("type") == "message_delta"] or [start]
        return start["input_tokens"], end[-1]["output_tokens"]
    if isinstance(fake, FakeOpenAI):
        usage = [e["usage"] for e in events if e.get("usage")][-1]
        return usage["prompt_tokens"], usage["completion_tokens"]
    usage = events[-1]["usageMetadata"]
    return usage["promptTokenCount"], usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)


@pytest.fixture
async def fakes(fake_upstream) -> dict[str, Any]:
    return {CLAUDE: await fake_upstream(Claude()), GPT: await fake_upstream(OpenAI()), GEMINI: await fake_upstream(Gemini())}


@pytest.fixture
def secret(seed, fakes) -> str:
    seed.channel("claude", type="anthropic", base_url=fakes[CLAUDE].url, models=[CLAUDE], api_keys=(ANTHROPIC_KEY,))
    seed.channel("gpt", type="openai", base_url=fakes[GPT].url, models=[GPT])
    seed.channel("gemini", type="gemini", base_url=fakes[GEMINI].url + "/v1beta", models=[GEMINI], api_keys=(GEMINI_KEY,))
    for model in (CLAUDE, GPT, GEMINI):
        seed.price(model, INPUT, OUTPUT)
    return seed.key(seed.user("alice", balance_usd=10))[1]


async def run_claude(gateway, secret: str, folder: Path, model: str, prompt: str, *options: str) -> dict[str, Any]:
    """``claude -p PROMPT`` in ``folder`` against the gateway: its JSON result (it must succeed)."""
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens: any call past the gateway fails at once
    env = {
        "PATH": os.environ.get("PATH", ""), "HOME": str(folder), "CLAUDE_CONFIG_DIR": str(folder / ".claude-home"),
        "ANTHROPIC_BASE_URL": gateway.url, "ANTHROPIC_API_KEY": secret, "ANTHROPIC_SMALL_FAST_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model, "HTTPS_PROXY": closed, "HTTP_PROXY": closed, "NO_PROXY": "127.0.0.1,localhost",
        "NO_COLOR": "1", **QUIET,
    }  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        str(CLAUDE_CODE), "-p", prompt, "--model", model, "--output-format", "json", "--max-turns", "4", *options,
        cwd=folder, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    assert process.returncode == 0, stdout[-3000:] + stderr[-3000:]
    result: dict[str, Any] = json.loads(stdout)
    assert result["is_error"] is False and result["subtype"] == "success", result
    return result


def assert_billed_once_per_call(seed, fake: Any, model: str) -> None:
    """One usage row per upstream call, each billed exactly what the fake reported; the balance down by their sum."""
    rows = seed.rows("SELECT model, status, end_reason, input_tokens, output_tokens, cost_micros FROM usage_logs ORDER BY id")
    usages = [reported_usage(fake, answer) for answer in fake.answers]
    assert len(rows) == len(fake.requests) == len(usages), (rows, len(fake.requests))
    assert [(r["model"], r["status"], r["end_reason"]) for r in rows] == [(model, 200, "done")] * len(rows)
    assert [(r["input_tokens"], r["output_tokens"]) for r in rows] == usages
    costs = [expected_cost(i, o) for i, o in usages]
    assert [r["cost_micros"] for r in rows] == costs and all(costs)
    balance = seed.rows("SELECT balance_micros FROM users WHERE name = 'alice'")[0]["balance_micros"]
    assert balance == 10_000_000 - sum(costs)


@pytest.mark.parametrize("model", [CLAUDE, GPT, GEMINI])
async def test_claude_code_one_shot(start_gateway, secret, seed, fakes, tmp_path, model):
    result = await run_claude(start_gateway(), secret, tmp_path, model, "say hello to the gateway")
    # the fakes echo the user's last words: the prompt is last, nothing after it
    assert result["result"].startswith("echo: ") and result["result"].endswith("say hello to the gateway"), result["result"]
    assert result["num_turns"] == 1
    fake = fakes[model]
    assert len(fake.requests) == 1 and all(f.requests == [] for f in fakes.values() if f is not fake)
    assert_billed_once_per_call(seed, fake, model)


@pytest.mark.parametrize("model", [CLAUDE, GPT, GEMINI])
async def test_claude_code_tool_round_trip(start_gateway, secret, seed, fakes, tmp_path, model):
    note = tmp_path / "note.txt"
    note.write_text(NOTE + "\n")
    fake = fakes[model]
    fake.read = str(note)
    result = await run_claude(start_gateway(), secret, tmp_path, model, "read note.txt, please", "--allowedTools", "Read")
    assert result["num_turns"] == 2, result
    assert len(fake.requests) == 2
    second = fake.requests[1]["body"]
    if model == CLAUDE:  # a tool_result block for the fake's tool_use, in the last user message
        call = second["messages"][-2]["content"][-1]
        assert call["type"] == "tool_use" and call["id"] == "toolu_rg1" and call["name"] == "Read"
        results = [b for b in second["messages"][-1]["content"] if b.get("type") == "tool_result"]
        assert len(results) == 1 and results[0]["tool_use_id"] == "toolu_rg1" and NOTE in json.dumps(results[0]["content"])
    elif model == GPT:  # a tool message answering the assistant's tool call
        calls = [m for m in second["messages"] if m.get("tool_calls")]
        tools = [m for m in second["messages"] if m["role"] == "tool"]
        assert len(calls) == 1 and calls[0]["tool_calls"][0]["id"] == "call_rg1" and calls[0]["tool_calls"][0]["function"]["name"] == "Read"
        assert len(tools) == 1 and tools[0]["tool_call_id"] == "call_rg1" and NOTE in json.dumps(tools[0]["content"])
    else:  # a functionResponse part answering the model's functionCall
        calls = [p for c in second["contents"] for p in c["parts"] if "functionCall" in p]
        responses = [p["functionResponse"] for c in second["contents"] for p in c["parts"] if "functionResponse" in p]
        assert len(calls) == 1 and calls[0]["functionCall"]["name"] == "Read"
        assert len(responses) == 1 and responses[0]["name"] == "Read" and NOTE in json.dumps(responses[0]["response"])
    assert result["result"].startswith("echo: Read gave ") and NOTE in result["result"]  # the fake echoes the result it got
    assert_billed_once_per_call(seed, fake, model)
