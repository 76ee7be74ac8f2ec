"""``relaygate channel models NAME [--fetch] [--add]``: a channel's models, the models
its upstream (a fake OpenAI server on loopback) offers, adding the new ones, and the
upstream's failures in one line — with no upstream key ever printed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3

import pytest

from gateway_core.commands.cli import main
from gateway_core.testing import Fault, free_port
from gateway_openai.fake_upstream import EXPECTED_KEY, MODELS, FakeOpenAI

WRONG = "sk-upstream-wrong-0123456789"


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``cli(*argv)`` → (status, stdout) with the openai and demo plugins; fails if a key is printed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELAYGATE_DB", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    (tmp_path / "plugins.toml").write_text('load = ["openai", "demo"]\n[gateway.timeouts]\nconnect = 2\nfirst_byte = 0.5\nidle = 2\n')
    db = str(tmp_path / "gw.db")
    assert main(["migrate", "--db", db]) == 0
    capsys.readouterr()

    def run(*argv: str) -> tuple[int, str]:
        status = main([*argv, "--db", db])
        out, err = capsys.readouterr()
        assert EXPECTED_KEY not in out + err and WRONG not in out + err, f"an upstream key was printed: {argv}"
        return status, out + err

    run.db = db  # type: ignore[attr-defined]
    return run


@pytest.fixture
async def upstream(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())


async def test_fetch_lists_marks_and_add_adds_the_new_models(cli, upstream):
    run = lambda *argv: asyncio.to_thread(cli, *argv)  # noqa: E731 - main() runs its own loop
    status, _ = await run("channel", "add", "up", "--type", "openai", "--base-url", upstream.url + "/v1", "--api-key", f"{WRONG},{EXPECTED_KEY}", "--models", "gpt-4o")
    assert status == 0
    status, out = await run("channel", "models", "up")
    assert (status, out) == (0, "gpt-4o\n")
    status, out = await run("channel", "models", "up", "--fetch", "--key", "1")
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith(f"up: the upstream lists {len(MODELS)} models, {len(MODELS) - 1} not yet served by the channel (")
    assert lines[0].endswith(" ms, key #1)") and [line.split() for line in lines[1:]] == [[m, "served" if m == "gpt-4o" else "new"] for m in MODELS]
    status, out = await run("channel", "models", "up", "--add", "--key", "1", "--match", "gpt-4o*")
    assert status == 0 and out.splitlines()[-1] == "Added 1 to channel 'up': it serves 2 models now."
    status, out = await run("channel", "models", "up", "--json")
    assert json.loads(out)["models"] == ["gpt-4o", "gpt-4o-mini"]
    status, out = await run("channel", "models", "up", "--add", "--key", "1", "--match", "gpt-4o*")
    assert out.splitlines()[-1] == "Nothing to add: channel 'up' serves every model listed."
    audit = audit_rows(cli.db)
    assert [(row["via"], row["action"]) for row in audit][-1:] == [("cli", "channel.update")]
    assert json.loads(audit[-1]["before_json"])["models"] == ["gpt-4o"] and json.loads(audit[-1]["after_json"])["models"] == ["gpt-4o", "gpt-4o-mini"]
    assert sum(row["action"] == "channel.update" for row in audit) == 1  # nothing added: nothing written


async def test_failures_are_one_line_and_exit_1(cli, upstream):
    run = lambda *argv: asyncio.to_thread(cli, *argv)  # noqa: E731
    await run("channel", "add", "up", "--type", "openai", "--base-url", upstream.url, "--api-key", WRONG, "--models", "gpt-4o")
    status, out = await run("channel", "models", "up", "--fetch")
    assert (status, out) == (1, "up: FAILED: the upstream refused the channel's key (401): Incorrect API key provided.\n")
    status, out = await run("channel", "models", "up", "--fetch", "--json")
    assert status == 1 and json.loads(out)["status"] == 401 and json.loads(out)["added"] == []
    upstream.api_key = None
    upstream.fail_next(Fault(first_byte_delay=1.5))
    status, out = await run("channel", "models", "up", "--add")
    assert (status, out) == (1, "up: FAILED: the upstream did not answer within 0.5 s\n")
    await run("channel", "add", "down", "--type", "openai", "--base-url", f"http://127.0.0.1:{free_port()}", "--api-key", WRONG, "--models", "m")
    status, out = await run("channel", "models", "down", "--fetch")
    assert status == 1 and out.startswith("down: FAILED: could not connect to the upstream") and out.count("\n") == 1
    status, out = await run("channel", "models", "up", "--fetch", "--key", "4")
    assert (status, out) == (1, "up: FAILED: the channel has no upstream key #4 (it has 1)\n")


def test_the_demo_channel_lists_its_own_and_unknown_channels_are_refused(cli):
    assert cli("channel", "add", "demo", "--type", "demo", "--base-url", "local://demo", "--models", "demo-x")[0] == 0
    status, out = cli("channel", "models", "demo", "--fetch")
    assert status == 0 and out.splitlines()[1].split() == ["demo-chat", "new", "no", "price"] and "key #" not in out
    status, out = cli("channel", "models", "demo", "--add")
    assert status == 0 and "Added 1 to channel 'demo'" in out
    assert "warning: no price for demo-chat, from you or the catalogue: requests to them are refused (403 model_not_priced)" in out
    cli("price", "set", "demo-chat", "--input", "1", "--output", "2")
    status, out = cli("channel", "models", "demo", "--fetch")
    assert out.splitlines()[1].split() == ["demo-chat", "served"]
    status, out = cli("channel", "models", "nobody", "--fetch")
    assert status != 0 and "no channel named 'nobody'" in out


def audit_rows(db: str) -> list[sqlite3.Row]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute("SELECT via, action, before_json, after_json FROM audit_log ORDER BY id").fetchall()
