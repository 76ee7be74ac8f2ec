"""Every admin command on both stores: the same script of ``relaygate`` commands
runs on a SQLite file and on a PostgreSQL database, and prints the same text,
the same ``--json`` and exits with the same statuses (secrets and times aside,
which differ from run to run)."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from gateway_core.commands.cli import main
from gateway_core.runtime.plugins import collect
from gateway_core.config import Config
from gateway_core.records import UsageRow
from gateway_core.testing.stores import admin_ports, open_store

PLUGINS_TOML = 'load = ["demo"]\n'
CI_KEY = 2  # bob's key "ci" (the admin's "demo" is 1)
T0 = 1_700_000_000.0  # usage rows' times: fixed, so that both stores list the same rows
SECRET = re.compile(r"sk-[A-Za-z0-9_-]+(…)?|(?<=\(shown only now\): )\S+|(?<=at rest: )\S+")  # and the key file: beside the db, or in RELAYGATE_HOME
CLOCK = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?Z?")
OLDEST = re.compile(r"\(oldest \d+ s\)")  # the age of the oldest reservation, as the clock turns

SCRIPT: list[tuple[str, ...]] = [
    ("init",),
    ("init", "--json"),
    ("user", "add", "bob"),
    ("user", "add", " bad"),  # invalid: exit 2
    ("user", "add", "carol", "--groups", "default,vip"),
    ("user", "list"),
    ("user", "list", "--json"),
    ("wallet", "topup", "bob", "5"),
    ("wallet", "topup", "bob", "0"),
    ("wallet", "topup", "nobody", "1"),
    ("wallet", "adjust", "bob", "-1.5", "--note", "refund of a duplicate top-up"),
    ("wallet", "show", "bob"),
    ("wallet", "show", "bob", "--json"),
    ("key", "create", "bob", "--name", "ci", "--json"),
    ("key", "create", "bob", "--name", "x", "--group", "vip"),  # not open to bob: exit 2
    ("key", "create", "bob", "--name", "quota", "--quota", "2"),
    ("key", "list", "bob"),
    ("key", "disable", "2"),
    ("key", "list", "bob"),
    ("key", "enable", "2"),
    ("key", "delete", "3"),
    ("key", "delete", "3"),  # gone: exit 1
    ("key", "list", "bob", "--json"),
    ("channel", "add", "main", "--type", "demo", "--base-url", "local://demo", "--models", "m-big,m-small",
     "--groups", "default,vip", "--api-key", "sk-upstream-a,sk-upstream-b"),  # fmt: skip
    ("channel", "edit", "main", "--weight", "3", "--json"),
    ("channel", "edit", "main", "--weight", "-2"),
    ("channel", "disable", "main"),
    ("channel", "list"),
    ("channel", "enable", "main"),
    ("channel", "list", "--json"),
    ("channel", "delete", "demo"),
    ("channel", "delete", "demo"),
    ("price", "set", "m-big", "--input", "2.50", "--output", "10", "--cached-input", "1.25"),
    ("price", "set", "m-small", "--free", "--json"),
    ("price", "list"),
    ("price", "list", "--json"),
    ("group", "set", "vip", "--ratio", "0.8", "--rpm", "120"),
    ("group", "list"),
    ("group", "list", "--json"),
    ("logs", "--json", "--limit", "1000"),
    ("logs", "--limit", "4"),
    ("logs", "--user", "bob", "--status", "429", "--json"),
    ("logs", "--model", "m-big", "--key", "2", "--json"),
    ("check",),
    ("check", "--json"),
    # refused inserts last: a PostgreSQL sequence is not rolled back, so the ids
    # after them would skip there and not on SQLite
    ("user", "add", "bob"),  # taken: exit 1
    ("channel", "add", "main", "--type", "demo", "--base-url", "local://demo", "--models", "m"),
]


async def seed_traffic(db: str) -> None:
    """bob's requests through the request path's port: settled ones, refused ones
    (no charge), and an open reservation."""
    store = open_store(db, collect(Config(db_path=db, load=("demo",))).migrations)
    await store.start()
    try:
        bob = await admin_ports(store)[0].find_user("bob")
        assert bob is not None
        for n in range(12):
            request_id = f"req_{n:02d}"
            charged = n % 4 != 0
            if charged:
                await store.hold(bob.id, 30_000, request_id, CI_KEY)
            await store.record(UsageRow(
                request_id=request_id, started_at=T0 + n * 60, protocol="openai", endpoint="chat", user_id=bob.id,
                key_id=CI_KEY, key_name="ci", model="m-big" if n % 3 == 0 else "m-small", status=200 if charged else 429,
                input_tokens=n, output_tokens=2 * n, cost_micros=n * 1000 if charged else 0,
            ), bob.id if charged else None)  # fmt: skip
        await store.hold(bob.id, 20_000, "req_open", CI_KEY)
    finally:
        await store.close()


def run_script(db: str, capsys: pytest.CaptureFixture[str]) -> list[tuple[tuple[str, ...], int, Any, str]]:
    results = []
    for n, argv in enumerate(SCRIPT):
        if argv[0] == "logs" and SCRIPT[n - 1][0] != "logs":
            asyncio.run(seed_traffic(db))
        status = main([*argv, "--db", db])
        out, err = capsys.readouterr()
        results.append((argv, status, normalized(out), normalized(err)))
    return results


def normalized(text: str) -> Any:
    """``text`` without what differs from run to run: JSON with its times and
    secrets blanked, or lines with them replaced."""
    try:
        return _blank(json.loads(text))
    except ValueError:
        return OLDEST.sub("(oldest <age> s)", CLOCK.sub("<time>", SECRET.sub("<secret>", text)))


def _blank(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: None if k.endswith("_at") or k in ("key", "secret", "prefix", "oldest_hold_age_s") else _blank(v)
                for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [_blank(item) for item in value]
    return value


def test_every_admin_command_says_the_same_on_both_stores(tmp_path: Path, pg_url: str, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELAYGATE_DB", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    (tmp_path / "plugins.toml").write_text(PLUGINS_TOML)
    on_sqlite = run_script(str(tmp_path / "gw.db"), capsys)
    on_postgres = run_script(pg_url, capsys)
    differences = [(theirs, ours) for theirs, ours in zip(on_sqlite, on_postgres, strict=True) if theirs != ours]
    assert differences == [], "\n\n".join(f"sqlite:   {a}\npostgres: {b}" for a, b in differences)
    statuses = [(argv[:3], status) for argv, status, _, _ in on_postgres]
    assert statuses.count((("user", "add", "bob"), 0)) == 1 and statuses.count((("user", "add", "bob"), 1)) == 1
    assert (("check",), 0) in statuses
    assert [status for _, status in statuses].count(1) >= 4  # the refusals refuse on both
    assert [status for _, status in statuses].count(2) >= 3
    logs = next(out for argv, _, out, _ in on_postgres if argv == ("logs", "--json", "--limit", "1000"))
    assert [row["request_id"] for row in logs] == [f"req_{n:02d}" for n in range(11, -1, -1)]
    big = next(out for argv, _, out, _ in on_postgres if argv[:2] == ("logs", "--model"))
    assert [row["request_id"] for row in big] == ["req_09", "req_06", "req_03", "req_00"]
    report = next(out for argv, _, out, _ in on_postgres if argv == ("check", "--json"))
    assert (report["ok"], report["open_holds"], report["held_micros"]) == (True, 1, 20_000)


def test_a_store_failure_is_one_line(tmp_path: Path, pg_url: str, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text(PLUGINS_TOML)
    unreachable = re.sub(r"@[^/]+/", "@127.0.0.1:1/", pg_url)
    status = main(["user", "list", "--db", unreachable])
    out, err = capsys.readouterr()
    assert status == 1 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert "PostgreSQL at 127.0.0.1:1/" in err and "unreachable" in err


async def corrupt(db: str) -> None:
    """Money that does not add up: a balance and a key's used amount changed behind the ledger's back."""
    statements = ("UPDATE users SET balance_micros = balance_micros + 10 WHERE name = 'alice'",
                  "UPDATE api_keys SET used_micros = 7 WHERE name = 'other'")  # fmt: skip
    if db.startswith("postgresql://"):
        conn = await asyncpg.connect(db)
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()
    else:
        with sqlite3.connect(db) as conn:
            for statement in statements:
                conn.execute(statement)


def test_check_reports_the_same_problems_on_both_stores(tmp_path: Path, pg_url: str, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text("load = []\n")
    reports = []
    for db in (str(tmp_path / "gw.db"), pg_url):
        for argv in (("migrate",), ("user", "add", "alice"), ("wallet", "topup", "alice", "4.5"), ("key", "create", "alice", "--name", "other")):
            assert main([*argv, "--db", db]) == 0
        asyncio.run(corrupt(db))
        capsys.readouterr()
        text_status, text = main(["check", "--db", db]), capsys.readouterr().out
        json_status, report = main(["check", "--json", "--db", db]), json.loads(capsys.readouterr().out)
        reports.append((text_status, text, json_status, _blank(report)))
    assert reports[0] == reports[1]
    status, text, _, report = reports[1]
    assert status == 1 and text.splitlines()[-1] == "2 problem(s) found."
    assert "PROBLEM [balance] user 'alice' (id 1): balance differs from the sum of its ledger rows: expected 4.50 USD, found 4.50001 USD" in text
    assert {problem["check"] for problem in report["problems"]} == {"balance", "key_used"}
