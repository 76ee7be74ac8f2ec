"""The gemini channel type's settings end to end: set with ``relaygate channel add
--setting``, validated, stored typed, and read by the channel on a real request
through the gateway to the fake upstream over loopback."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from gateway_core.commands.cli import main
from gateway_gemini.fake_upstream import EXPECTED_KEY, FakeGemini

MODEL = "gemini-test"
BODY = {"contents": [{"role": "user", "parts": [{"text": "w1 w2"}]}]}


@pytest.fixture
def relaygate(seed, tmp_path, capsys):
    """``relaygate(*argv)`` → (status, stdout, stderr) of the real command on the seeded database."""
    plugins = tmp_path / "every-plugin.toml"
    plugins.write_text("# every installed plugin\n")

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = main([*argv, "--db", seed.config.db_path, "--plugins", str(plugins)])
        out, err = capsys.readouterr()
        return status, out, err

    return run


async def generate(url: str, key: str, model: str = MODEL) -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{url}/v1beta/models/{model}:generateContent", data=orjson.dumps(BODY), headers={"x-goog-api-key": key}) as response:
            return response.status, await response.read()


async def test_api_version_set_from_the_cli_reaches_the_upstreams_path(seed, relaygate, fake_upstream, start_gateway):
    upstream = await fake_upstream(FakeGemini())
    _, key = seed.key(seed.user("alice", balance_usd=1))
    seed.price(MODEL, 1_000_000, 2_000_000)
    status, _, err = relaygate("channel", "add", "google", "--type", "gemini", "--base-url", upstream.url, "--models", "gemini-test",
                               "--api-key", EXPECTED_KEY,
                               "--model-map", "gemini-test=gemini-2.5-flash", "--setting", "api_version=v1alpha")  # fmt: skip
    assert status == 0, err
    status, _, err = relaygate("channel", "add", "older", "--type", "gemini", "--base-url", upstream.url, "--models", "older",
                               "--setting", "api_version=v2")  # fmt: skip
    assert status == 2 and "setting 'api_version' must be one of v1beta, v1, v1alpha, got 'v2'" in err
    seed.channel("stored-as-text", type="gemini", base_url=upstream.url, models=["legacy"], settings={"api_version": " v1 "})
    seed.channel("plain", type="gemini", base_url=upstream.url, models=["plain"])
    gateway = start_gateway()

    status, body = await generate(gateway.url, key)
    assert status == 200, body
    assert upstream.requests[-1]["path"] == "/v1alpha/models/gemini-2.5-flash:generateContent"
    assert orjson.loads(body)["candidates"][0]["content"]["parts"][0]["text"] == "echo: w1 w2"
    await generate(gateway.url, key, "legacy")  # stored before settings were validated: read as "v1"
    assert upstream.requests[-1]["path"] == "/v1/models/legacy:generateContent"
    await generate(gateway.url, key, "plain")  # not set: the default
    assert upstream.requests[-1]["path"] == "/v1beta/models/plain:generateContent"
