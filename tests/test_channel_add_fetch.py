"""``relaygate channel add … --fetch-models [--match PATTERN]``: the upstream (a fake
OpenAI server on loopback) is asked first, with the key given, and the channel serves
what it lists after the models of ``--models``; one warning, on stderr, names every
model with no price (the words of ``channel models --add``, the API and the console);
a listing that fails or finds nothing adds no channel. No upstream key is printed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3

import pytest

from gateway_core.commands.cli import main
from gateway_openai.fake_upstream import EXPECTED_KEY, MODELS, FakeOpenAI

WRONG = "sk-upstream-wrong-0123456789"
PRICE_ADVICE = "from you or the catalogue: requests to them are refused (403 model_not_priced) until you set one (relaygate price set MODEL --input USD --output USD, or relaygate price import FILE)"


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``await cli(*argv)`` → (status, stdout, stderr), with the openai and demo plugins."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELAYGATE_DB", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    (tmp_path / "plugins.toml").write_text('load = ["openai", "demo"]\n[gateway.timeouts]\nconnect = 2\nfirst_byte = 2\nidle = 2\n')
    db = str(tmp_path / "gw.db")
    assert main(["migrate", "--db", db]) == 0
    capsys.readouterr()

    def run(*argv: str) -> tuple[int, str, str]:
        status = main([*argv, "--db", db])
        out, err = capsys.readouterr()
        assert EXPECTED_KEY not in out + err and WRONG not in out + err, f"an upstream key was printed: {argv}"
        return status, out, err

    async def call(*argv: str) -> tuple[int, str, str]:
        return await asyncio.to_thread(run, *argv)  # main() runs its own event loop

    call.db = db  # type: ignore[attr-defined]
    return call


@pytest.fixture
async def upstream(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())


async def channels(cli) -> dict[str, list[str]]:
    status, out, _ = await cli("channel", "list", "--json")
    assert status == 0
    return {row["name"]: row["models"] for row in json.loads(out)}


def audit_actions(db: str) -> list[str]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return [action for (action,) in conn.execute("SELECT action FROM audit_log ORDER BY id")]


ADD = ("channel", "add", "up", "--type", "openai", "--api-key", EXPECTED_KEY)


async def test_the_channel_serves_what_the_upstream_lists(cli, upstream):
    status, out, err = await cli(*ADD, "--base-url", upstream.url, "--fetch-models")
    lines = out.splitlines()
    assert (status, err) == (0, "")  # every model the fake lists is in the catalogue: no warning
    assert lines[0].startswith(f"up: the upstream lists {len(MODELS)} models, 0 not yet served by the channel (") and lines[0].endswith(" ms)")
    assert [line.split() for line in lines[1:-1]] == [[model, "served"] for model in MODELS]
    assert lines[-1].startswith("Added channel 'up' (id 1, type openai, 1 upstream key(s))")
    assert await channels(cli) == {"up": list(MODELS)} and audit_actions(cli.db) == ["channel.create"]
    assert upstream.requests[0]["path"] == "/v1/models" and upstream.requests[0]["headers"]["Authorization"] == f"Bearer {EXPECTED_KEY}"


async def test_given_models_come_first_and_one_warning_names_every_unpriced_one(cli, upstream):
    status, out, err = await cli(*ADD, "--base-url", upstream.url + "/v1", "--models", "house-model,gpt-4o", "--fetch-models", "--match", "gpt-4o*")
    assert status == 0 and await channels(cli) == {"up": ["house-model", "gpt-4o", "gpt-4o-mini"]}
    assert out.splitlines()[0].startswith("up: the upstream lists 2 models matching 'gpt-4o*', 0 not yet served by the channel")
    assert err == f"warning: no price for house-model, {PRICE_ADVICE}\n"
    status, out, _ = await cli("channel", "add", "again", "--type", "demo", "--base-url", "local://demo", "--fetch-models", "--json")
    assert status == 0 and json.loads(out)["models"] == ["demo-chat"]  # --json: the record alone, the warning on stderr


async def test_a_listing_that_fails_or_finds_nothing_adds_no_channel(cli, upstream):
    status, out, err = await cli("channel", "add", "up", "--type", "openai", "--api-key", WRONG, "--base-url", upstream.url, "--fetch-models")
    assert (status, out) == (1, "")
    assert err == (
        "relaygate channel add: the upstream's models could not be fetched, so no channel was added: "
        "the upstream refused the channel's key (401): Incorrect API key provided.\n"
    )
    status, _, err = await cli(*ADD, "--base-url", upstream.url, "--fetch-models", "--match", "claude-*")
    assert status == 1 and err.endswith("so no channel was added: the upstream lists no models matching 'claude-*'\n")
    assert await channels(cli) == {} and audit_actions(cli.db) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "--models is required (the models clients ask for), or --fetch-models to serve those the upstream lists"),
        (("--models", "m", "--match", "m*"), "--match goes with --fetch-models"),
    ],
)
async def test_models_or_fetch_models(cli, upstream, args, message):
    status, out, err = await cli(*ADD, "--base-url", upstream.url, *args)
    assert (status, out, err) == (2, "", f"relaygate channel add: {message}\n")  # a usage error
    assert upstream.requests == []
