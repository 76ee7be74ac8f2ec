"""``relaygate copy-store``: an installation built through the CLI on SQLite, with
traffic through a ``relaygate serve`` process (priced requests, a stream, a
refused request), moved to a fresh PostgreSQL database; the PostgreSQL store then
reads the same keys, channels and prices, and a request through a gateway on the
copy is charged exactly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import aiohttp
import asyncpg
import attrs
import openai
import pytest

from gateway_core.billing.testing import CACHED, INPUT, MODEL, OUTPUT, UNPRICED_MODEL, expected_cost
from gateway_core.commands.cli import main
from gateway_core.config import load_config
from gateway_core.money import format_usd
from gateway_core.runtime.plugins import collect
from gateway_core.secrets import hash_key
from gateway_core.store import Store
from gateway_core.store.copy import DERIVED
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.schema import for_postgresql
from relaygate_postgres.audit import audit
from gateway_core.testing import GatewayProcess
from gateway_openai.fake_upstream import EXPECTED_KEY, FakeOpenAI

CHAT: list = [{"role": "user", "content": "one two three four"}]


@attrs.frozen
class Installation:
    path: Path
    plugins: str
    secret: str
    request_ids: list[str]
    token: str  # a personal access token of alice's


def cli(*argv: str) -> None:
    assert main(list(argv)) == 0, argv


def usd_per_mtok(micros: int) -> str:
    return format_usd(micros)


@pytest.fixture
async def upstream(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
async def installation(tmp_path, upstream, capsys) -> Installation:
    """A SQLite installation made with the CLI, with traffic through a gateway."""
    plugins = tmp_path / "plugins.toml"
    plugins.write_text('load = ["openai", "console"]\n', encoding="utf-8")
    db = tmp_path / "relaygate.db"
    common = ("--db", str(db), "--plugins", str(plugins))
    cli("migrate", *common)
    cli("group", "set", "vip", "--ratio", "1.5", *common)
    cli("user", "add", "alice", "--groups", "vip,default", *common)
    cli("user", "add", "bob", "--groups", "default", *common)
    cli("wallet", "topup", "alice", "10", *common)
    cli("price", "set", MODEL, "--input", usd_per_mtok(INPUT), "--output", usd_per_mtok(OUTPUT),
        "--cached-input", usd_per_mtok(CACHED), *common)  # fmt: skip
    cli("channel", "add", "up", "--type", "openai", "--base-url", upstream.url, "--api-key", f"{EXPECTED_KEY},sk-upstream-2",
        "--models", f"{MODEL},{UNPRICED_MODEL}", *common)  # fmt: skip
    capsys.readouterr()
    cli("key", "create", "alice", "--name", "ci", "--quota", "5", "--json", *common)
    secret = json.loads(capsys.readouterr().out)["key"]
    cli("token", "create", "alice", "--scope", "write", "--json", *common)  # an access token and its audit row
    token = json.loads(capsys.readouterr().out)["token"]
    ids: list[str] = []
    with GatewayProcess(db, plugins_file=str(plugins)) as gateway:
        client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, timeout=30)
        for _ in range(3):
            raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=20)
            ids.append(raw.headers["x-request-id"])
        stream = await client.chat.completions.create(
            model=MODEL, messages=CHAT, max_tokens=20, stream=True, stream_options={"include_usage": True}
        )
        async for _chunk in stream:
            pass
        with pytest.raises(openai.APIStatusError):  # no price: refused before any upstream call
            await client.chat.completions.create(model=UNPRICED_MODEL, messages=CHAT, max_tokens=20)
    return Installation(db, str(plugins), secret, ids, token)


def sqlite_counts(path: Path, *, derived: bool = True) -> dict[str, int]:
    """Rows per table (``derived``: with the tables a copy does not carry, as its target fills them)."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        skipped = {"schema_migrations", *(() if derived else DERIVED)}
        return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables if t not in skipped}
    finally:
        conn.close()


def copy(installation: Installation, target: str, capsys, *extra: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(["copy-store", "--from", f"sqlite:///{installation.path}", "--to", target, "--plugins", installation.plugins, *extra])
    out, err = capsys.readouterr()
    return status, out, err


async def test_an_installation_moves_to_postgresql_whole(installation, pg_url, capsys):
    status, out, err = copy(installation, pg_url, capsys, "--json")
    assert status == 0, err
    report = json.loads(out)
    counts = sqlite_counts(installation.path)
    buckets = counts.pop("budget_buckets")  # derived: the target's trigger fills it from the ledger's captures
    assert report["tables"] == counts and report["check"] == "ok"
    assert buckets == 2  # alice's and her key's hour
    assert counts["usage_logs"] == 5 and counts["ledger"] == 5 and counts["console_settings"] == 1  # a top-up, 4 captures
    assert counts["access_tokens"] == 1 and counts["audit_log"] == 8  # each of the CLI's writes above
    assert list(report["tables"]).index("users") < list(report["tables"]).index("api_keys")

    registry = collect(load_config(None, installation.plugins))
    lite, pg = Store(str(installation.path), registry.migrations), PostgresStore(pg_url, migrations=for_postgresql(registry.migrations))
    await lite.start()
    await pg.start()
    try:
        key = await pg.find_key(hash_key(installation.secret))
        assert key is not None and key == await lite.find_key(hash_key(installation.secret))
        assert await pg.list_channels() == await lite.list_channels()
        assert await pg.price_snapshot() == await lite.price_snapshot()
    finally:
        await lite.close()
        await pg.close()

    conn = await asyncpg.connect(pg_url)
    try:
        groups = await conn.fetch(
            "SELECT group_name FROM user_groups AS g JOIN users AS u ON u.id = g.user_id WHERE u.name = 'alice' ORDER BY g.ordinal"
        )
        assert [row["group_name"] for row in groups] == ["vip", "default"]
        assert (await audit(conn)).ok
        source = sqlite3.connect(installation.path)
        try:
            spent = dict(source.execute("SELECT subject || ':' || hour, spent_micros FROM budget_buckets").fetchall())
        finally:
            source.close()
        copied = await conn.fetch("SELECT subject || ':' || hour AS at, spent_micros FROM budget_buckets")
        assert {row["at"]: row["spent_micros"] for row in copied} == spent and spent
        # sequences run past the ids copied: a new user gets a fresh id
        new_id = await conn.fetchval("INSERT INTO users (name) VALUES ('carol') RETURNING id")
        assert new_id == counts["users"] + 1
        await conn.execute("DELETE FROM users WHERE id = $1", new_id)
        before = await conn.fetchval("SELECT balance_micros FROM users WHERE name = 'alice'")
        used_before = await conn.fetchval("SELECT used_micros FROM api_keys WHERE name = 'ci'")
    finally:
        await conn.close()

    with GatewayProcess(pg_url, plugins_file=installation.plugins) as gateway:
        client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=installation.secret, max_retries=0, timeout=30)
        raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=20)
        usage = raw.parse().usage
        assert usage is not None
        async with aiohttp.ClientSession() as http:  # the access token came along
            async with http.get(gateway.url + "/api/v1/me", headers={"authorization": f"Bearer {installation.token}"}) as me:
                assert me.status == 200 and (await me.json())["user"]["name"] == "alice"
    cost = expected_cost(usage.prompt_tokens, usage.completion_tokens)  # the key's group: default, ratio 1
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT balance_micros FROM users WHERE name = 'alice'") == before - cost
        assert await conn.fetchval("SELECT used_micros FROM api_keys WHERE name = 'ci'") == used_before + cost
        assert await conn.fetchval("SELECT cost_micros FROM usage_logs WHERE request_id = $1", raw.headers["x-request-id"]) == cost
        assert (await audit(conn)).ok
    finally:
        await conn.close()


async def test_a_non_empty_target_is_refused_and_left_alone(installation, pg_url, capsys):
    assert copy(installation, pg_url, capsys)[0] == 0
    status, out, err = copy(installation, pg_url, capsys)
    assert status == 1 and out == ""
    assert err.startswith("relaygate copy-store: PostgreSQL at ") and "is not empty (table users has rows)" in err
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM usage_logs") == 5
    finally:
        await conn.close()


async def test_the_text_report_counts_each_table_and_a_migrated_empty_target_is_accepted(installation, pg_url, capsys):
    assert main(["migrate", "--db", pg_url, "--plugins", installation.plugins]) == 0  # the default group, the console's secret
    status, out, err = copy(installation, pg_url, capsys)
    assert status == 0, err
    lines = out.splitlines()
    counts = sqlite_counts(installation.path, derived=False)
    assert {line.split()[0]: int(line.split()[1]) for line in lines[:-1]} == counts
    assert lines[-1].startswith(f"copied {sum(counts.values())} rows in {len(counts)} tables") and "check ok" in lines[-1]


def test_a_missing_source_is_refused(tmp_path, pg_url, capsys):
    assert main(["copy-store", "--from", str(tmp_path / "nothing.db"), "--to", pg_url]) == 1
    assert f"no database at {tmp_path / 'nothing.db'}" in capsys.readouterr().err


async def test_a_copy_whose_books_do_not_balance_leaves_nothing(installation, pg_url, capsys):
    conn = sqlite3.connect(installation.path)
    conn.execute("UPDATE users SET balance_micros = balance_micros + 1 WHERE name = 'alice'")
    conn.commit()
    conn.close()
    status, _, err = copy(installation, pg_url, capsys)
    assert status == 1 and "do not balance" in err and "user 'alice'" in err
    pg = await asyncpg.connect(pg_url)
    try:
        assert await pg.fetchval("SELECT count(*) FROM users") == 0
    finally:
        await pg.close()


async def test_a_copy_goes_back_to_a_new_sqlite_file(installation, pg_url, tmp_path, capsys):
    assert copy(installation, pg_url, capsys)[0] == 0
    back = tmp_path / "back.db"
    assert main(["copy-store", "--from", pg_url, "--to", f"sqlite:///{back}", "--plugins", installation.plugins, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tables"] == sqlite_counts(installation.path, derived=False)
    assert sqlite_counts(installation.path) == sqlite_counts(back)  # the buckets filled again from the ledger
    assert back.stat().st_mode & 0o777 == 0o600  # it holds the upstream keys
    conn = sqlite3.connect(back)
    try:
        alice = conn.execute("SELECT id FROM users WHERE name = 'alice'").fetchone()[0]
        groups = conn.execute("SELECT group_name FROM user_groups WHERE user_id = ? ORDER BY ordinal", (alice,)).fetchall()
        assert [row[0] for row in groups] == ["vip", "default"]
    finally:
        conn.close()


@pytest.mark.parametrize("source_plugins, copy_plugins, says", [
    ("load = []\n", 'load = ["console"]\n', "is older than this code (pending: 8000_console): run `relaygate migrate` on it first"),
    ('load = ["console"]\n', "load = []\n", "has migrations this code does not (load their plugins): 8000_console"),
])  # fmt: skip
def test_a_source_whose_schema_differs_from_the_code_is_refused(tmp_path, pg_url, capsys, source_plugins, copy_plugins, says):
    (tmp_path / "source.toml").write_text(source_plugins, encoding="utf-8")
    (tmp_path / "copy.toml").write_text(copy_plugins, encoding="utf-8")
    source = tmp_path / "source.db"
    assert main(["migrate", "--db", str(source), "--plugins", str(tmp_path / "source.toml")]) == 0
    capsys.readouterr()
    assert main(["copy-store", "--from", str(source), "--to", pg_url, "--plugins", str(tmp_path / "copy.toml")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
