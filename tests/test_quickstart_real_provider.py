"""docs/quickstart.md's real-provider path, followed as a new operator follows it: the
``relaygate`` commands as the doc writes them (``make run``'s ``init`` and ``serve``, the
demo key it prints, ``channel add openai-main …`` with the doc's flags, ``channel test``,
``channel models --fetch``, ``channel list``, ``wallet topup admin``, then the doc's
``curl`` for ``gpt-4o-mini``), the only changes the base URL (a fake OpenAI server on
loopback for ``https://api.openai.com``) and the port, and no ``price set``: the request
through the running gateway answers 200, and its usage row is charged at the
catalogue's price (``price list`` says ``source: catalogue``)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from gateway_core.testing import free_port
from gateway_openai.fake_upstream import EXPECTED_KEY, FakeOpenAI

RELAYGATE = Path(sys.executable).parent / "relaygate"
QUICKSTART = Path(__file__).resolve().parent.parent / "docs" / "quickstart.md"


def doc_command(start: str, containing: str = "") -> list[str]:
    """The quickstart's shell command that starts with ``start`` (and holds
    ``containing``; its ``\\`` lines joined, its ``# comment`` dropped), split into
    words as the shell would."""
    text = QUICKSTART.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith(start) and containing in line:
            return shlex.split(line, comments=True)
    raise AssertionError(f"docs/quickstart.md has no command starting {start!r}")


def curl_request(argv: list[str], port: int, key: str) -> tuple[str, dict[str, str], bytes]:
    """The URL, headers and body of the doc's ``curl`` command (its port ours)."""
    assert argv[0] == "curl"
    url, headers, body = "", {}, b""
    words = iter(argv[1:])
    for word in words:
        if word == "-H":
            name, _, value = next(words).partition(":")
            headers[name.strip()] = value.strip().replace("$RELAYGATE_API_KEY", key)
        elif word == "-d":
            body = next(words).encode()
        else:
            url = word
    assert url.startswith("http://127.0.0.1:8080/"), url
    return url.replace(":8080", f":{port}"), headers, body


@pytest.fixture
def home(tmp_path, monkeypatch) -> dict[str, str]:
    """A new operator's environment: a fresh RELAYGATE_HOME, nothing else of ours set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYGATE_")}
    env["RELAYGATE_HOME"] = str(tmp_path / "home")
    env["OPENAI_API_KEY"] = EXPECTED_KEY
    return env


async def shell(env: dict[str, str], cwd: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``relaygate …`` (argv as the doc writes it, ``$OPENAI_API_KEY`` expanded)."""
    assert argv[0] == "relaygate"
    words = [env["OPENAI_API_KEY"] if word == "$OPENAI_API_KEY" else word for word in argv[1:]]
    return await asyncio.to_thread(
        subprocess.run, [str(RELAYGATE), *words], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


async def test_the_quickstarts_real_provider_path_answers_200_priced_from_the_catalogue(tmp_path, home, fake_upstream):
    upstream = await fake_upstream(FakeOpenAI())
    port = free_port()
    # 1. make run: init, then serve
    done = await shell(home, tmp_path, ["relaygate", "init", "--host", "127.0.0.1", "--port", str(port)])
    assert done.returncode == 0, done.stderr
    demo_key = re.search(r"^\s+(sk-\S+)$", done.stdout, re.M)
    assert demo_key is not None, done.stdout
    server = subprocess.Popen([str(RELAYGATE), "serve", "--host", "127.0.0.1", "--port", str(port)], cwd=tmp_path, env=home,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        gateway = f"http://127.0.0.1:{port}"
        bearer = {"Authorization": f"Bearer {demo_key.group(1)}"}
        async with aiohttp.ClientSession(headers=bearer) as http:
            await ready(http, gateway, server)

            # 3. add a real upstream, as written (the base URL aside)
            add = doc_command("relaygate channel add openai-main")
            assert add[add.index("--base-url") + 1] == "https://api.openai.com" and add[add.index("--api-key") + 1] == "$OPENAI_API_KEY"
            add[add.index("--base-url") + 1] = upstream.url
            done = await shell(home, tmp_path, add)
            assert done.returncode == 0 and done.stderr == "", done.stderr  # both models priced by the catalogue: no warning
            for start in ("relaygate channel test openai-main", "relaygate channel models openai-main", "relaygate channel list",
                          "relaygate wallet topup admin"):  # fmt: skip
                done = await shell(home, tmp_path, doc_command(start))
                assert done.returncode == 0, (start, done.stdout, done.stderr)
                assert EXPECTED_KEY not in done.stdout + done.stderr
            done = await shell(home, tmp_path, ["relaygate", "price", "list", "--json"])
            prices = {row["model"]: row for row in json.loads(done.stdout)}
            assert prices["gpt-4o-mini"]["source"] == "catalogue", prices.get("gpt-4o-mini")

            # the doc's request for the real model (a channel is picked up within a second)
            url, headers, body = curl_request(doc_command("curl", '"gpt-4o-mini"'), port, demo_key.group(1))
            answer = await until_served(url, headers, body)
            assert answer["choices"][0]["message"]["content"] == "echo: Hello"
            usage = answer["usage"]

        done = await shell(home, tmp_path, ["relaygate", "logs", "--model", "gpt-4o-mini", "--json"])
        assert done.returncode == 0, done.stderr
        rows = json.loads(done.stdout)
        row = rows[0]
        assert (row["status"], row["channel_name"], row["input_tokens"], row["output_tokens"]) == (200, "openai-main", usage["prompt_tokens"], usage["completion_tokens"])
        price = prices["gpt-4o-mini"]
        assert (price["input_micros_per_mtok"], price["output_micros_per_mtok"]) == (150_000, 600_000)  # 0.15 and 0.60 USD per million
        expected = (usage["prompt_tokens"] * 150_000 + usage["completion_tokens"] * 600_000) / 1_000_000
        assert row["cost_micros"] > 0 and abs(row["cost_micros"] - expected) <= 1, (row, price)
        assert upstream.requests[-1]["headers"]["Authorization"] == f"Bearer {EXPECTED_KEY}"
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
        assert EXPECTED_KEY not in err


async def ready(http: aiohttp.ClientSession, gateway: str, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read() if server.stderr else "the gateway stopped"
        try:
            async with http.get(gateway + "/v1/models") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise AssertionError("the gateway did not start")


async def until_served(url: str, headers: dict[str, str], body: bytes) -> dict:
    """The answer to the request, once the new channel is seen (a 503/404 before it is)."""
    deadline = time.monotonic() + 10
    while True:
        async with aiohttp.ClientSession() as http, http.post(url, headers=headers, data=body) as response:
            answer = await response.json()
            if response.status == 200:
                return answer
            assert time.monotonic() < deadline, (response.status, answer)
            assert response.status in (404, 503), (response.status, answer)  # not seen yet: anything else is a failure
        await asyncio.sleep(0.3)
