"""The real coding CLIs (Codex, Claude Code, the Gemini CLI) against the gateway, on
loopback with fake upstreams in the providers' wire formats: what their tests share.
Each test module sets a CLI's own opt-outs (telemetry, update checks); run under strace,
every CLI connects only to the gateway, and a CLI run in a network namespace with
loopback alone passes the same.

Test modules cannot import this file (``--import-mode=importlib``): they reach it
through fixtures.

- ``cli_binary(name, variable)`` finds a CLI's binary (``make coding-clis`` puts them
  in ``.venv/coding-clis``; ``$variable`` may name another) or skips the test.
- ``run_cli(argv, folder, env)`` runs one with a timeout, a clean environment (a temporary HOME,
  nothing of the user's) and a proxy on a closed loopback port, so that anything
  it calls besides the gateway fails at once instead of leaving the machine.
- ``world``: an anthropic, an openai (chat completions, or Responses by
  ``world_openai_settings``) and a gemini channel, each
  on a fake that can ask for one tool call (``fake.ask = (name, args)``) and then
  answers the result it receives (``"echo: NAME gave RESULT"``, the Gemini fake's
  own words, so the CLI's final output shows the result crossed the channel); every
  model priced, alice with 10 USD and a key. :meth:`World.assert_billed_once_per_call`
  checks one usage row per upstream call, each billed exactly what the fake reported.
"""

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
from gateway_core.billing.testing import CACHED, INPUT, OUTPUT, expected_cost
from gateway_core.testing import free_port
from gateway_gemini.fake_upstream import EXPECTED_KEY as GEMINI_KEY
from gateway_gemini.fake_upstream import FakeGemini, prompt_tokens
from gateway_openai import fake_responses
from gateway_openai.fake_upstream import FakeOpenAI, completion, stream_chunks, usage_for

CLIS = Path(__file__).resolve().parents[2] / ".venv" / "coding-clis" / "node_modules" / ".bin"
NOTE = "relaygate-note-7f3a: the answer is forty-two"  # the file the fakes ask the CLIs to read
BALANCE = 10_000_000  # alice's, in micro-USD


def installed(name: str, variable: str) -> str | None:
    """The CLI's binary: ``$variable``, else ``make coding-clis``'s, else one on the PATH."""
    return os.environ.get(variable) or (str(CLIS / name) if (CLIS / name).exists() else shutil.which(name))


async def run_cli(argv: list[str], folder: Path, env: dict[str, str], timeout: float = 60) -> tuple[str, str]:
    """Run a CLI in ``folder`` (also its HOME) with only ``env`` (and PATH): its stdout and stderr (it must succeed)."""
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    proxy = {"HTTPS_PROXY": closed, "HTTP_PROXY": closed, "https_proxy": closed, "http_proxy": closed, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    full = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "NO_COLOR": "1", **proxy, **env}
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=folder, env=full, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    assert process.returncode == 0, stdout[-3000:] + stderr[-3000:]
    return stdout, stderr


def gave(name: str, result: Any) -> str:
    """How the fakes answer a tool's result (the Gemini fake's own words)."""
    return f"echo: {name} gave {orjson.dumps(result).decode()}"


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


@attrs.define
class Claude(Recorded, FakeAnthropic):
    """Asks for ``ask`` until the last message carries a tool result, then echoes that;
    answers ``json_answer`` to a request for structured output."""

    ask: tuple[str, dict[str, Any]] | None = None
    json_answer: str | None = None
    answers: list[Any] = attrs.field(factory=list)

    def answer_blocks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        content = (body.get("messages") or [{}])[-1].get("content")
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(content, list) else []
        self.tool_uses = None if results or not self.ask else [{"id": "toolu_rg1", "name": self.ask[0], "input": self.ask[1]}]
        blocks = super().answer_blocks(body)
        text = gave(self.ask[0] if self.ask else "?", results[-1]["content"]) if results else None
        if self.json_answer and (body.get("output_config") or {}).get("format"):
            text = self.json_answer
        return blocks if text is None else [{"type": "text", "text": text} if b["type"] == "text" else b for b in blocks]


@attrs.define
class OpenAI(Recorded, FakeOpenAI):
    """Asks for ``ask`` until a tool message (chat) or a ``function_call_output`` item
    (Responses) comes, then echoes that; answers ``json_answer`` to a chat request for
    structured output."""

    ask: tuple[str, dict[str, Any]] | None = None
    json_answer: str | None = None
    answers: list[Any] = attrs.field(factory=list)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        results = [m for m in body.get("messages") or [] if m.get("role") == "tool"]
        call = None if results or not self.ask else {"id": "call_rg1", "type": "function", "function": {"name": self.ask[0], "arguments": json.dumps(self.ask[1])}}
        self.tool_call = call
        text = gave(self.ask[0] if self.ask else "?", results[-1]["content"]) if results else None
        if self.json_answer and body.get("response_format"):
            text = self.json_answer
        if text is None:
            return await super().chat(request)
        fault, refusal = await self.admit(request, body)  # the fake's own answer, with that text
        if refusal is not None:
            return refusal
        if not body.get("stream"):
            return self.answer(completion(body, text, usage_for(body, text), None), fault)
        include_usage = (body.get("stream_options") or {}).get("include_usage") is True
        chunks = [b"data: " + orjson.dumps(c) + b"\n\n" for c in stream_chunks(body, text, usage_for(body, text), include_usage, None)]
        return await self.stream(request, chunks, fault, end=b"data: [DONE]\n\n")

    async def responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        outputs = [i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") == "function_call_output"]
        call = None if outputs or not self.ask else {"id": "call_rg1", "function": {"name": self.ask[0], "arguments": json.dumps(self.ask[1])}}
        self.tool_call = call
        if not outputs or not body.get("stream"):
            return await super().responses(request)
        fault, refusal = await self.admit(request, body)  # the fake's own stream, echoing the output as if the user had said it
        if refusal is not None:
            return refusal
        said = gave(self.ask[0] if self.ask else "?", outputs[-1]["output"]).removeprefix("echo: ")
        events = fake_responses.events({**body, "input": [*body["input"], {"role": "user", "content": said}]}, None)
        return await self.stream(request, [b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events], fault)


@attrs.define
class Gemini(Recorded, FakeGemini):
    """Asks for ``ask`` until a functionResponse comes (the fake echoes that); answers
    ``json_answer`` to a request for JSON output."""

    ask: tuple[str, dict[str, Any]] | None = None
    json_answer: str | None = None
    answers: list[Any] = attrs.field(factory=list)

    def chunks(self, model: str, body: dict[str, Any]) -> Any:
        if not self.json_answer or (body.get("generationConfig") or {}).get("responseMimeType") != "application/json":
            return super().chunks(model, body)
        candidate = {"index": 0, "content": {"role": "model", "parts": [{"text": self.json_answer}]}, "finishReason": "STOP"}
        usage = {"promptTokenCount": prompt_tokens(body), "candidatesTokenCount": 9, "totalTokenCount": prompt_tokens(body) + 9}
        return iter([{"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": "fake-json-1"}])

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        contents = (await request.json()).get("contents") or []
        answered = any("functionResponse" in part for c in contents for part in c.get("parts") or [])
        self.function_call = None if answered or not self.ask else {"name": self.ask[0], "args": self.ask[1]}
        return await super().dispatch(request)


def reported_usage(fake: Any, answer: Any) -> tuple[int, int, int]:
    """The (input, output, cached input) tokens a fake reported in an answer, read from its own wire."""
    events = [json.loads(chunk.split(b"data: ", 1)[1]) for chunk in answer if b"data: {" in chunk] if isinstance(answer, list) else [answer]
    if isinstance(fake, FakeAnthropic):
        start = next(e["message"]["usage"] if e["type"] == "message_start" else e["usage"] for e in events if e.get("type") in ("message_start", "message"))
        end = [e["usage"] for e in events if e.get("type") == "message_delta"] or [start]
        return start["input_tokens"], end[-1]["output_tokens"], start.get("cache_read_input_tokens", 0)
    completed = [e["response"]["usage"] for e in events if e.get("type") == "response.completed"]
    if completed:  # Responses
        return completed[-1]["input_tokens"], completed[-1]["output_tokens"], completed[-1]["input_tokens_details"]["cached_tokens"]
    if isinstance(fake, FakeOpenAI):
        usage = [e["usage"] for e in events if e.get("usage")][-1]
        return usage["prompt_tokens"], usage["completion_tokens"], usage["prompt_tokens_details"]["cached_tokens"]
    usage = events[-1]["usageMetadata"]
    return usage["promptTokenCount"], usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0), usage.get("cachedContentTokenCount", 0)


@attrs.define
class World:
    seed: Any
    secret: str
    fakes: dict[str, Any]  # by model name
    channels: dict[str, dict[str, Any]]  # each model's channel: how to add another on the same fake
    note: str = NOTE

    def serve(self, model: str, *models: str) -> None:
        """A second channel on ``model``'s fake, of its type, serving ``models`` (priced);
        add it before the gateway starts."""
        self.seed.channel(f"{model}-too", models=list(models), **self.channels[model])
        for other in models:
            self.seed.price(other, INPUT, OUTPUT, cached_input_micros_per_mtok=CACHED)

    def assert_billed_once_per_call(self, model: str, answered_by_gateway: int = 0, row_models: list[str] | None = None) -> None:
        """One usage row per upstream call (of ``model``'s fake, the only one called), each
        billed exactly what the fake reported; alice's balance down by their sum. Besides
        them, ``answered_by_gateway`` rows of requests the gateway answered itself, free.
        ``row_models``: the rows' models, in order, when not all ``model``."""
        fake = self.fakes[model]
        assert all(not other.requests for other in self.fakes.values() if other is not fake)
        columns = "channel_id, model, status, end_reason, input_tokens, output_tokens, cached_tokens, cost_micros"
        every = self.seed.rows(f"SELECT {columns} FROM usage_logs ORDER BY id")
        rows = [r for r in every if r["channel_id"] is not None]
        assert len(every) - len(rows) == answered_by_gateway and all(not r["cost_micros"] for r in every if r["channel_id"] is None), every
        usages = [reported_usage(fake, answer) for answer in fake.answers]
        assert len(rows) == len(fake.requests) == len(usages), (rows, len(fake.requests))
        assert [(r["model"], r["status"], r["end_reason"]) for r in rows] == [(m, 200, "done") for m in row_models or [model] * len(rows)]
        assert [(r["input_tokens"], r["output_tokens"], r["cached_tokens"] or 0) for r in rows] == usages
        costs = [expected_cost(i, o, cached) for i, o, cached in usages]
        assert [r["cost_micros"] for r in rows] == costs and all(costs)
        assert self.seed.rows("SELECT balance_micros FROM users WHERE name = 'alice'")[0]["balance_micros"] == BALANCE - sum(costs)


@pytest.fixture
def cli_binary() -> Any:
    def find(name: str, variable: str) -> str:
        binary = installed(name, variable)
        if binary is None:
            pytest.skip(f"{name} is not installed (make coding-clis)")
        return binary

    return find


@pytest.fixture(name="run_cli")
def run_cli_fixture() -> Any:
    return run_cli


@pytest.fixture
def world_models() -> tuple[str, str, str]:
    """The (anthropic, openai, gemini) channels' model names: a CLI's test module overrides it."""
    return ("claude-sonnet-4-6", "gpt-4o", "gemini-2.5-flash")


@pytest.fixture
def world_openai_settings() -> dict[str, Any]:
    """The openai channel's settings (``{"responses": True}``: it speaks Responses)."""
    return {}


@pytest.fixture
async def world(seed, fake_upstream, world_models, world_openai_settings) -> World:
    claude, gpt, gemini = world_models
    fakes = {claude: await fake_upstream(Claude()), gpt: await fake_upstream(OpenAI()), gemini: await fake_upstream(Gemini())}
    channels = {
        claude: {"type": "anthropic", "base_url": fakes[claude].url, "api_keys": (ANTHROPIC_KEY,)},
        gpt: {"type": "openai", "base_url": fakes[gpt].url, "settings": world_openai_settings},
        gemini: {"type": "gemini", "base_url": fakes[gemini].url + "/v1beta", "api_keys": (GEMINI_KEY,)},
    }
    for model, channel in channels.items():
        seed.channel(channel["type"], models=[model], **channel)
        seed.price(model, INPUT, OUTPUT, cached_input_micros_per_mtok=CACHED)
    return World(seed, seed.key(seed.user("alice", balance_usd=BALANCE // 1_000_000))[1], fakes, channels)
