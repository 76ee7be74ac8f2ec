"""Upstream keys sealed at rest with ``RELAYGATE_SECRET_KEY``, on both stores: never in
the clear in the database, read back in the clear, plain keys from before still read,
``relaygate rotate-secrets`` sealing them again under a new key, ``serve`` refusing
in one line when a key cannot be opened; and a gateway calling its upstream with a
sealed key."""

from __future__ import annotations

import asyncio
import sqlite3

import asyncpg
import openai
import pytest

from gateway_core.commands.cli import main
from gateway_core.store.sealing import SEALED
from gateway_core.testing import free_port

KEY_A, KEY_B = "sk-upstream-AAAA-1234567890", "sk-upstream-BBBB-0987654321"


def raw_keys(db_url: str) -> str:
    """The ``api_keys`` column of every channel, as stored."""
    if db_url.startswith("postgresql"):
        async def read() -> str:
            conn = await asyncpg.connect(db_url)
            try:
                return " ".join(row[0] for row in await conn.fetch("SELECT api_keys FROM channels ORDER BY id"))
            finally:
                await conn.close()

        return asyncio.run(read())
    conn = sqlite3.connect(db_url)
    try:
        return " ".join(row[0] for row in conn.execute("SELECT api_keys FROM channels ORDER BY id"))
    finally:
        conn.close()


def run(db_url: str, *args: str) -> int:
    return main([*args, "--db", db_url])


def add(db_url: str, name: str, *keys: str) -> None:
    api_keys = [arg for key in keys for arg in ("--api-key", key)]
    assert run(db_url, "channel", "add", name, "--type", "demo", "--base-url", "local://demo", "--models", f"m-{name}", *api_keys) == 0


def listed_keys(db_url: str, capsys) -> str:
    capsys.readouterr()
    assert run(db_url, "channel", "list", "--json") == 0
    return capsys.readouterr().out


@pytest.fixture(autouse=True)
def only_demo(tmp_path, monkeypatch, request):
    (tmp_path / "plugins.toml").write_text('load = ["demo"]\n')
    monkeypatch.chdir(tmp_path)
    for name in ("RELAYGATE_SECRET_KEY", "RELAYGATE_SECRET_KEY_FILE", "RELAYGATE_SECRET_KEY_PREVIOUS", "RELAYGATE_SECRET_KEY_PREVIOUS_FILE"):
        monkeypatch.delenv(name, raising=False)
    if "db_url" in request.fixturenames:  # commands but init, serve and migrate need a database
        assert run(request.getfixturevalue("db_url"), "migrate") == 0


def test_keys_are_sealed_at_rest_plain_ones_still_read_and_rotation_reseals(db_url, monkeypatch, capsys):
    add(db_url, "plain", KEY_A)  # before any secret key: stored as it is
    assert KEY_A in raw_keys(db_url)
    monkeypatch.setenv("RELAYGATE_SECRET_KEY", "first secret key")
    add(db_url, "sealed", KEY_B)
    stored = raw_keys(db_url)
    assert KEY_B not in stored and SEALED in stored and KEY_A in stored
    assert "sk-u…4321" in listed_keys(db_url, capsys)  # read back (masked for display)

    assert run(db_url, "rotate-secrets") == 0
    assert "sealed the upstream keys of 2 channel(s)" in capsys.readouterr().out
    first = raw_keys(db_url)
    assert KEY_A not in first and KEY_B not in first and first.count(SEALED) == 2

    monkeypatch.setenv("RELAYGATE_SECRET_KEY", "second secret key")
    monkeypatch.setenv("RELAYGATE_SECRET_KEY_PREVIOUS", "first secret key")
    assert run(db_url, "rotate-secrets") == 0
    second = raw_keys(db_url)
    assert second.count(SEALED) == 2 and set(second.split()) & set(first.split()) == set()

    monkeypatch.delenv("RELAYGATE_SECRET_KEY_PREVIOUS")  # the old key is no longer needed
    listing = listed_keys(db_url, capsys)
    assert "sk-u…7890" in listing and "sk-u…4321" in listing
    assert run(db_url, "channel", "edit", "sealed", "--api-key", KEY_A) == 0  # an edit seals under the current key
    assert KEY_A not in raw_keys(db_url)


def test_a_key_sealed_with_a_secret_not_configured_is_one_line(db_url, monkeypatch, capsys, tmp_path):
    secret_file = tmp_path / "secret"
    secret_file.write_text("kept in a file\n")
    monkeypatch.setenv("RELAYGATE_SECRET_KEY_FILE", str(secret_file))
    add(db_url, "sealed", KEY_A)
    monkeypatch.setenv("RELAYGATE_SECRET_KEY", "another secret key")  # over the file
    capsys.readouterr()
    assert run(db_url, "channel", "list") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sealed with a secret key" in err and "RELAYGATE_SECRET_KEY_PREVIOUS" in err
    assert run(db_url, "serve", "--port", str(free_port())) == 2  # refused before serving
    assert "sealed with a secret key" in capsys.readouterr().err
    monkeypatch.delenv("RELAYGATE_SECRET_KEY")
    assert "sk-u…7890" in listed_keys(db_url, capsys)


def test_rotate_secrets_needs_a_secret_key(db_url, capsys):
    assert run(db_url, "rotate-secrets") == 2
    assert "set RELAYGATE_SECRET_KEY" in capsys.readouterr().err


async def test_a_gateway_calls_its_upstream_with_the_opened_key(monkeypatch, seed, start_gateway, fake_upstream, relaygate_config):
    from gateway_openai.fake_upstream import EXPECTED_KEY, FakeOpenAI

    monkeypatch.setenv("RELAYGATE_SECRET_KEY", "gateway secret key")
    upstream = await fake_upstream(FakeOpenAI())
    user = seed.user("alice")
    _, key = seed.key(user)
    seed.channel("oai", type="openai", base_url=upstream.url + "/v1", models=["m"], api_keys=[EXPECTED_KEY])
    assert EXPECTED_KEY not in raw_keys(relaygate_config.db_path)
    gateway = start_gateway()
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0)
    answer = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content
    assert upstream.requests[-1]["headers"]["Authorization"] == f"Bearer {EXPECTED_KEY}"
