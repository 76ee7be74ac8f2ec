"""Exports of the usage log carry every row, on both stores: thousands of rows
(three to each second, so that pages end inside a tie) read back through the
management API's CSV and JSON lines, ``relaygate logs export`` and the pager at
its largest page, and compared row by row with the table.

A page of exactly the largest size once reported no next page (the store read no
row past it), so every export stopped at 1,000 rows without a word."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import datetime as dt
import io
import json
import sqlite3
from decimal import Decimal

import asyncpg
import attrs
import pytest
import requests

from gateway_core.admin.usage import MAX_PAGE
from gateway_core.admin.usage_export import COLUMNS, OWNER_COLUMNS
from gateway_core.commands.cli import main
from gateway_core.store import usage as store_usage
from relaygate_postgres.migrate import numbered

ROWS = 2_600
T0 = 1_790_000_000.0
INSERT = (
    "INSERT INTO usage_logs (request_id, created_at, user_id, key_id, key_name, protocol, endpoint, model, stream, "
    "status, input_tokens, output_tokens, cost_micros, estimated, duration_ms, first_token_ms, client_ip) "
    "VALUES (?, ?, ?, ?, ?, 'openai', 'chat', ?, ?, ?, ?, ?, ?, 0, ?, ?, '127.0.0.1')"
)


def cli(db: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["--db", db, *argv])
    return status, out.getvalue(), err.getvalue()


def cli_json(db: str, *argv: str) -> dict:
    status, out, err = cli(db, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


def insert_rows(db: str, rows: list[tuple]) -> None:
    if not db.startswith("postgresql://"):
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.executemany(INSERT, rows)
        return

    async def write() -> None:
        conn = await asyncpg.connect(db)
        try:
            await conn.executemany(numbered(INSERT), rows)
        finally:
            await conn.close()

    asyncio.run(write())


@attrs.frozen
class Site:
    db: str
    url: str
    admin: requests.Session
    alice: requests.Session
    users: dict[int, str]  # id -> name

    def table(self, where: str = "", params: tuple = ()) -> list[dict]:
        """The usage log as the table holds it, newest first (the exports' order)."""
        sql = f"SELECT * FROM usage_logs {where} ORDER BY created_at DESC, id DESC"
        if not self.db.startswith("postgresql://"):
            with contextlib.closing(sqlite3.connect(self.db)) as conn:
                conn.row_factory = sqlite3.Row
                return [dict(row) for row in conn.execute(sql, params)]

        async def read() -> list[dict]:
            conn = await asyncpg.connect(self.db)
            try:
                return [dict(row) for row in await conn.fetch(numbered(sql), *params)]
            finally:
                await conn.close()

        return asyncio.run(read())


def session(token: str) -> requests.Session:
    http = requests.Session()
    http.headers["authorization"] = f"Bearer {token}"
    return http


@pytest.fixture
def site(db_url, relaygate_config, start_gateway) -> Site:
    assert cli(db_url, "migrate")[0] == 0
    cli_json(db_url, "user", "add", "root", "--admin")
    names = {"alice": 0, "bob": 0}
    keys = {}
    for name in names:
        names[name] = cli_json(db_url, "user", "add", name)["id"]
        keys[name] = cli_json(db_url, "key", "create", name, "--name", f"{name}-key")["id"]
    rows = []
    for n in range(ROWS):
        name = "alice" if n % 3 != 2 else "bob"
        rows.append((
            f"req_export_{n:05d}", T0 + n // 3, names[name], keys[name], f"{name}-key", "m-big" if n % 4 == 0 else "m-small",
            n % 2, 429 if n % 50 == 0 else 200, n, 2 * n, 7 * n + 1, n * 1.234567, (n * 0.987654) if n % 2 else None,
        ))  # fmt: skip
    insert_rows(db_url, rows)
    root = cli_json(db_url, "token", "create", "root", "--scope", "admin")["token"]
    alice = cli_json(db_url, "token", "create", "alice", "--scope", "read")["token"]
    gateway = start_gateway(attrs.evolve(relaygate_config, db_path=db_url))
    return Site(db_url, gateway.url + "/api/v1", session(root), session(alice), {v: k for k, v in names.items()})


def check_rows(site: Site, exported: list[dict], table: list[dict], columns: tuple[str, ...]) -> None:
    """Every exported row is the table's row in the same place, in the export's forms."""
    assert [row["request_id"] for row in exported] == [row["request_id"] for row in table]
    for got, want in zip(exported, table):
        assert tuple(got) == columns
        assert int(got["id"]) == want["id"] and int(got["cost_micros"]) == want["cost_micros"]
        assert Decimal(str(got["cost"])) * 1_000_000 == want["cost_micros"]
        created = dt.datetime.fromisoformat(str(got["created_at"]).replace("Z", "+00:00"))
        assert created.tzinfo is not None and abs(created.timestamp() - want["created_at"]) < 0.0005
        assert float(got["duration_ms"]) == round(want["duration_ms"], 2)
        first = got["first_token_ms"]
        assert (float(first) if first not in ("", None) else None) == (round(want["first_token_ms"], 2) if want["first_token_ms"] is not None else None)
        assert (int(got["input_tokens"]), int(got["output_tokens"]), int(got["status"])) == (want["input_tokens"], want["output_tokens"], want["status"])
        assert str(got["stream"]).lower() == ("true" if want["stream"] else "false")
        if "user" in columns:
            assert got["user"] == site.users[want["user_id"]]


def csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def jsonl_rows(text: str) -> list[dict]:
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_the_store_reads_the_row_past_the_largest_page():
    assert store_usage.MAX_READ > MAX_PAGE


def test_the_api_exports_every_row_as_csv_and_json_lines(site):
    everyone = site.table()
    assert len(everyone) == ROWS
    answer = site.admin.get(site.url + "/logs.csv", timeout=60)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/csv")
    check_rows(site, csv_rows(answer.text), everyone, COLUMNS)
    answer = site.admin.get(site.url + "/logs.jsonl", timeout=60)
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    check_rows(site, jsonl_rows(answer.text), everyone, COLUMNS)

    alice_id = next(user_id for user_id, name in site.users.items() if name == "alice")
    own = site.table("WHERE user_id = ?", (alice_id,))
    assert len(own) > MAX_PAGE
    check_rows(site, csv_rows(site.alice.get(site.url + "/usage.csv", timeout=60).text), own, OWNER_COLUMNS)
    check_rows(site, jsonl_rows(site.alice.get(site.url + "/usage.jsonl", timeout=60).text), own, OWNER_COLUMNS)
    assert site.alice.get(site.url + "/logs.csv", timeout=10).status_code == 403  # everyone's rows are for admins

    # a filter and a bound: exactly the rows the table has for it, the newest `limit`
    errors = site.table("WHERE status >= 400")
    check_rows(site, csv_rows(site.admin.get(site.url + "/logs.csv", params={"errors": "true"}, timeout=30).text), errors, COLUMNS)
    bounded = site.admin.get(site.url + "/logs.jsonl", params={"limit": MAX_PAGE + 1}, timeout=30).text
    check_rows(site, jsonl_rows(bounded), everyone[: MAX_PAGE + 1], COLUMNS)
    exactly = site.admin.get(site.url + "/logs.jsonl", params={"limit": MAX_PAGE}, timeout=30).text
    check_rows(site, jsonl_rows(exactly), everyone[:MAX_PAGE], COLUMNS)


def test_pages_of_the_largest_size_walk_every_row(site):
    seen, cursor = [], None
    while True:
        params = {"limit": MAX_PAGE, **({"cursor": cursor} if cursor else {})}
        page = site.admin.get(site.url + "/logs", params=params, timeout=30).json()
        seen += [item["request_id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert len(page["items"]) == MAX_PAGE  # a full page always says more rows follow
    assert seen == [row["request_id"] for row in site.table()]


def test_relaygate_logs_export_writes_every_row_of_its_filter(site, tmp_path):
    everyone = site.table()
    status, out, err = cli(site.db, "logs", "export")
    assert status == 0, err
    check_rows(site, csv_rows(out), everyone, COLUMNS)

    target = tmp_path / "archive.jsonl"
    since, until = T0 + 100, T0 + 700  # ISO 8601 and Unix seconds, as --since and --until take them
    since_text = dt.datetime.fromtimestamp(since, dt.timezone.utc).isoformat()
    status, out, err = cli(site.db, "logs", "export", "--format", "jsonl", "--output", str(target), "--since", since_text, "--until", repr(until), "--user", "bob")
    assert status == 0 and out == "", err
    bob_id = next(user_id for user_id, name in site.users.items() if name == "bob")
    wanted = site.table("WHERE user_id = ? AND created_at >= ? AND created_at < ?", (bob_id, since, until))
    assert len(wanted) == 600
    check_rows(site, jsonl_rows(target.read_text(encoding="utf-8")), wanted, COLUMNS)
    assert not (tmp_path / "archive.jsonl.partial").exists()

    status, out, _ = cli(site.db, "logs", "--limit", str(MAX_PAGE))  # the page view still pages
    assert status == 0 and out.rstrip().splitlines()[-1].startswith("next page: --before ")
    status, _, err = cli(site.db, "logs", "export", "--format", "xml")
    assert status == 2 and "--format" in err and "csv" in err
    status, _, err = cli(site.db, "logs", "export", "--output", str(tmp_path / "missing" / "x.csv"))
    assert status == 1 and "cannot write" in err and "\n" == err[-1] and err.count("\n") == 1
