"""The usage log's retention on both stores: hourly totals equal the rows'
totals before and after the rollup and pruning, a prune deletes only rolled-up
rows older than the retention (in batches), and money and history tables are
never touched."""

from __future__ import annotations

import json
import random
import re
import time
from typing import Any

import asyncpg
import attrs
import pytest

from gateway_core.admin import Admin, retention
from gateway_core.config import ConfigError, config_from_mapping
from gateway_core.base.retention import Retention
from gateway_core.store import CORE_MIGRATIONS, sqlite_path
from gateway_core.testing.stores import open_admin
from gateway_core.stores import scheme_of
from relaygate_postgres.migrate import numbered
from gateway_core.store.usage import daily_query, totals_query

HOUR, DAY = 3600, 86_400
NOW = 1_767_225_600.0 + 40 * DAY + 1234.5  # not on an hour
ROWS = 3000
INSERT = (
    "INSERT INTO usage_logs (request_id, created_at, user_id, key_id, model, channel_id, channel_name, status, "
    "input_tokens, output_tokens, cost_micros, protocol, endpoint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'openai', 'chat')"
)


def usage_rows(count: int, start: int = 0, *, seed: int = 7) -> list[tuple[Any, ...]]:
    """Rows over the 30 days before NOW, written out of time order (a request's row is
    written when it ends), with absent values (no key, model, channel or status)."""
    rng = random.Random(seed)
    rows = []
    for n in range(start, start + count):
        created = NOW - rng.uniform(0, 30 * DAY)
        status = rng.choice((200, 200, 200, 200, 429, 502, None))
        channel = rng.choice((None, 1, 2, 3))
        rows.append((
            f"req_{n}", created, rng.randrange(1, 6), rng.choice((None, 1, 2, 3, 4)), rng.choice((None, "m1", "m2", "m3")),
            channel, None if channel is None else f"ch{channel}", status,
            rng.randrange(0, 5000), rng.choice((None, rng.randrange(0, 900))), rng.randrange(0, 70_000),
        ))  # fmt: skip
    return rows


async def execute(url: str, sql: str, rows: list[tuple[Any, ...]] | None = None) -> list[tuple[Any, ...]]:
    """Run ``sql`` on the database itself (not through the gateway's store)."""
    if scheme_of(url) is not None:
        conn = await asyncpg.connect(url)
        try:
            if rows is not None:
                await conn.executemany(numbered(sql), rows)
                return []
            return [tuple(row) for row in await conn.fetch(numbered(sql))]
        finally:
            await conn.close()
    import sqlite3

    lite = sqlite3.connect(sqlite_path(url))
    try:
        with lite:
            if rows is not None:
                lite.executemany(sql, rows)
                return []
            return [tuple(row) for row in lite.execute(sql)]
    finally:
        lite.close()


async def seed_people(url: str) -> None:
    await execute(url, "INSERT INTO users (id, name, created_at) VALUES (?, ?, 0)", [(i, f"user-{i}") for i in range(1, 6)])
    await execute(
        url, "INSERT INTO api_keys (id, user_id, name, key_hash, prefix, created_at) VALUES (?, ?, ?, ?, 'sk-x', 0)",
        [(k, k, f"key-{k}", f"hash-{k}") for k in range(1, 5)],
    )  # fmt: skip


# every figure a dashboard or report reads: (what, arguments of usage_totals or daily_spending)
SPANS = [
    ("site 30 d by day", "time", NOW // HOUR * HOUR - 29 * DAY, NOW // HOUR * HOUR + HOUR, None, DAY),
    ("site 7 d by UTC day", "time", NOW // DAY * DAY - 6 * DAY, NOW // DAY * DAY + DAY, None, DAY),
    ("site 24 h by hour", "time", NOW // HOUR * HOUR - 23 * HOUR, NOW // HOUR * HOUR + HOUR, None, HOUR),
    ("user 7 d by day, half-hour zone", "time", NOW // HOUR * HOUR - 7 * DAY + 1800, NOW + DAY, 3, DAY),
    ("site by model", "model", NOW - 30 * DAY, NOW + HOUR, None, None),
    ("site by user", "user", NOW - 12 * DAY - 1000, None, None, None),
    ("site by channel", "channel", NOW // HOUR * HOUR - 20 * DAY, NOW // HOUR * HOUR - 2 * DAY + 700, None, None),
    ("user by key", "key", NOW - 30 * DAY, NOW - 1, 2, None),
    ("user by model", "model", NOW - 3 * HOUR - 17, NOW - HOUR - 5, 4, None),
]


async def figures(admin: Any, spans: list[tuple[Any, ...]] = SPANS) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, by, since, until, user, bucket in spans:
        totals = await admin.usage_totals(by, since, 1000, until=until, user_id=user, bucket=bucket)
        found[name] = sorted((attrs.astuple(total) for total in totals), key=repr)
    found["daily spending"] = [attrs.astuple(day) for day in await admin.daily_spending(NOW // DAY * DAY - 29 * DAY)]
    found["daily spending of a user"] = [attrs.astuple(day) for day in await admin.daily_spending(NOW - 9 * DAY, 2)]
    return found


async def raw_figures(url: str) -> dict[str, Any]:
    """The same figures read from every row of the log, as before usage_hourly."""
    postgres = scheme_of(url) is not None
    found: dict[str, Any] = {}
    for name, by, since, until, user, bucket in SPANS:
        sql, params = totals_query(by, since, 1000, until=until, user_id=user, bucket=bucket, postgres=postgres, hourly=False)
        found[name] = sorted((tuple(int(v) if k else v for k, v in enumerate(row)) for row in await query(url, sql, params)), key=repr)
    return found


async def query(url: str, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    if scheme_of(url) is not None:
        conn = await asyncpg.connect(url)
        try:
            return [tuple(row) for row in await conn.fetch(numbered(sql), *params)]
        finally:
            await conn.close()
    import sqlite3

    lite = sqlite3.connect(sqlite_path(url))
    try:
        return [tuple(row) for row in lite.execute(sql, params)]
    finally:
        lite.close()


async def count(url: str, table: str) -> int:
    return int((await execute(url, f"SELECT count(*) FROM {table}"))[0][0])


async def test_hourly_totals_equal_the_rows_before_and_after_pruning(db_url):
    settings = Retention(usage_days=10, batch_rows=200, batch_pause_seconds=0)
    async with open_admin(db_url, CORE_MIGRATIONS) as port:
        await seed_people(db_url)
        await execute(db_url, INSERT, usage_rows(ROWS))
        admin = Admin(port)
        before = await figures(port)
        assert {k: v for k, v in before.items() if k in dict.fromkeys(s[0] for s in SPANS)} == await raw_figures(db_url)
        assert sum(row[1] for row in before["site by model"]) == ROWS  # every row in the 30 days, once

        # part of the log rolled up: the rest is read from the rows
        await port.roll_up_usage(1000, NOW, 0.0)
        step = await port.roll_up_usage(1000, NOW, 0.0)
        assert step.end == 1000
        assert await figures(port) == before
        # more rows arrive (their hours already rolled up), then everything is rolled up
        await execute(db_url, INSERT, usage_rows(500, ROWS, seed=8))
        before = await figures(port)
        assert await retention.roll_up(admin, settings, now=NOW, margin=0.0, sleep=_no_sleep) == ROWS + 500
        assert await figures(port) == before
        assert 0 < await count(db_url, "usage_hourly") <= ROWS + 500

        off_the_hour = {span[0] for span in SPANS if span[2] < settings.cutoff(NOW) and span[2] % HOUR}
        assert off_the_hour == {"site by model", "site by user", "user by key"}
        from_first_hour = [(name, by, -(-since // HOUR) * HOUR, *rest) for name, by, since, *rest in SPANS if name in off_the_hour]
        before_from_first_hour = await figures(port, from_first_hour)
        found = await port.prunable_usage(settings.cutoff(NOW))
        assert found.waiting == 0 and found.rows > 0 and found.newest < settings.cutoff(NOW)
        report = await retention.prune(admin, settings, now=NOW, margin=0.0, sleep=_no_sleep)
        assert report.pruned == found.rows and not report.busy
        assert await count(db_url, "usage_logs") == ROWS + 500 - found.rows
        oldest = (await execute(db_url, "SELECT min(created_at) FROM usage_logs WHERE id < (SELECT max(id) FROM usage_logs)"))[0][0]
        assert oldest >= settings.cutoff(NOW)
        after = await figures(port)
        # every span starting on an hour reads the same; one starting inside the pruned
        # time off the hour counts from its first whole hour (the rows before that are gone)
        for name in before.keys() - off_the_hour:
            assert after[name] == before[name], name
        assert await figures(port, from_first_hour) == before_from_first_hour
        assert (await retention.prune(admin, settings, now=NOW, margin=0.0)).pruned == 0


async def test_a_prune_keeps_rows_not_rolled_up_and_never_touches_money(db_url):
    settings = Retention(usage_days=5, batch_rows=100, batch_pause_seconds=0)
    async with open_admin(db_url, CORE_MIGRATIONS) as port:
        await seed_people(db_url)
        await execute(db_url, INSERT, usage_rows(1000))
        admin = Admin(port)
        await port.topup(1, 5_000_000, "retention test")
        ledger, audit = await count(db_url, "ledger"), await count(db_url, "audit_log")
        # nothing is rolled up yet: nothing is prunable, a dry run says so and deletes nothing
        dry = await retention.prune(admin, settings, now=NOW, dry_run=True)
        assert dry.found is not None and dry.found.rows == 0 and dry.found.waiting > 0
        assert await port.prune_usage(settings.cutoff(NOW), 100) == 0
        assert await count(db_url, "usage_logs") == 1000
        # rolled up to id 400: only rows up to it go, 100 a transaction
        for _ in range(4):
            await port.roll_up_usage(100, NOW, 0.0)
        await port.roll_up_usage(100, NOW, 0.0)
        old = (await execute(db_url, f"SELECT count(*) FROM usage_logs WHERE id <= 400 AND created_at < {settings.cutoff(NOW)}"))[0][0]
        assert await port.prune_usage(settings.cutoff(NOW), 100) == min(old, 100)
        report = await retention.prune(admin, attrs.evolve(settings, batch_rows=10_000), now=NOW, margin=0.0)
        # (the row of the largest id stays whatever its age: see the test below)
        left = await execute(
            db_url, f"SELECT count(*) FROM usage_logs WHERE created_at < {settings.cutoff(NOW)} AND id < (SELECT max(id) FROM usage_logs)"
        )
        assert left[0][0] == 0 and report.pruned > 0
        assert await count(db_url, "ledger") == ledger and await count(db_url, "audit_log") == audit
        assert (await port.check_ledger()).problems == ()


async def test_ids_are_folded_only_once_seen_for_the_margin(db_url):
    async with open_admin(db_url, CORE_MIGRATIONS) as port:
        await seed_people(db_url)
        await execute(db_url, INSERT, usage_rows(50))
        first = await port.roll_up_usage(100, NOW, 60.0)  # remembers id 50, folds nothing yet
        assert (first.end, first.seen_id) == (0, 50)
        assert not (await port.roll_up_usage(100, NOW + 59, 60.0)).folded
        await execute(db_url, INSERT, usage_rows(10, 50, seed=9))
        ripe = await port.roll_up_usage(100, NOW + 60, 60.0)
        assert (ripe.end, ripe.seen_id) == (50, 60)  # up to what was seen a minute ago; the new mark
        # without a clock of its own the store reads the database's (PostgreSQL: the one all replicas share)
        await execute(db_url, INSERT, usage_rows(5, 60, seed=10))
        own = await port.roll_up_usage(100, None, 60.0)
        assert own.end == 60 and own.seen_id == 65 and abs(own.seen_at - time.time()) < 5


def test_retention_settings():
    assert config_from_mapping({}).retention == Retention()
    assert Retention().prunes is False
    config = config_from_mapping({"retention": {"usage_days": 90, "batch_rows": 1000, "interval_seconds": 30}})
    assert config.retention == Retention(usage_days=90, batch_rows=1000, interval_seconds=30.0)
    assert config.retention.cutoff(NOW) == (NOW - 90 * DAY) // HOUR * HOUR
    for bad, message in (
        ({"usage_days": -1}, "usage_days must be a whole number, 0 or more"),
        ({"usage_days": 1.5}, "usage_days must be a whole number"),
        ({"batch_rows": 0}, "batch_rows must be a whole number, 1 or more"),
        ({"interval_seconds": 0}, "interval_seconds must be a number of seconds, more than 0"),
        ({"keep": 3}, "unknown [retention] setting(s): keep"),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            config_from_mapping({"retention": bad})


async def _no_sleep(_seconds: float) -> None:
    return None


def test_which_totals_each_figure_reads():
    site, params = daily_query(NOW // DAY * DAY - 7 * DAY)
    assert "FROM usage_site" in site and "usage_hourly" not in site and "NOT INDEXED" in site
    assert params[-3:] == [DAY, "model", NOW // DAY * DAY - 7 * DAY]  # whole UTC days
    mine, _ = daily_query(NOW - 7 * DAY, 3)
    assert "FROM usage_hourly" in mine and "usage_site" not in mine
    # buckets of days on UTC midnights read days; in a zone off UTC, hours
    utc, params = totals_query("time", NOW // DAY * DAY - 7 * DAY, 8, until=NOW // DAY * DAY + DAY, bucket=DAY)
    assert params[-5:-2] == [DAY, "all", NOW // DAY * DAY - 7 * DAY]
    zone, params = totals_query("time", NOW // DAY * DAY - 7 * DAY + 7200, 8, until=NOW // DAY * DAY + DAY + 7200, bucket=DAY)
    assert DAY not in params[2:] and "FROM usage_site" in zone
    raw, _ = totals_query("time", NOW - 7 * DAY, 8, until=NOW, bucket=DAY)  # buckets off the hour: every row
    assert "usage_site" not in raw and "usage_hourly" not in raw


async def test_the_command_says_what_it_would_delete_then_deletes_it(tmp_path, capsys):
    from gateway_core.commands.cli import main

    db = str(tmp_path / "gw.db")
    async with open_admin(db, CORE_MIGRATIONS) as _port:
        await seed_people(db)
    now = time.time()
    old = [(f"old_{n}", now - 40 * DAY + n, 1, 1, "m1", 1, "ch1", 200, 10, 5, 100) for n in range(700)]
    young = [(f"new_{n}", now - 2 * DAY + n, 1, 1, "m1", 1, "ch1", 200, 10, 5, 100) for n in range(300)]
    await execute(db, INSERT, old + young)
    plugins = tmp_path / "plugins.toml"
    plugins.write_text('load = []\n\n[retention]\nusage_days = 30\nbatch_pause_seconds = 0\n')
    args = ["--db", db, "--plugins", str(plugins)]

    assert main(["logs", "prune", "--dry-run", *args]) == 0
    said = capsys.readouterr().out
    assert said.startswith("A prune would delete 0 usage row(s) created before ") and "700 older row(s) are not rolled up yet" in said
    assert main(["logs", "prune", *args]) == 0
    said = capsys.readouterr().out
    assert said.startswith("Deleted 700 usage row(s) created before ") and "every row up to id 1000" in said
    assert await count(db, "usage_logs") == 300
    audit = await execute(db, "SELECT action, target, after_json FROM audit_log")
    assert [(action, target) for action, target, _ in audit] == [("usage.prune", "usage log")] and json.loads(audit[0][2])["pruned"] == 700
    assert main(["logs", "prune", "--days", "1", "--dry-run", "--json", *args]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run"] and report["usage_days"] == 1 and report["found"]["rows"] == 299 and report["pruned"] == 0  # the last row stays
    plugins.write_text("load = []\n")
    assert main(["logs", "prune", *args]) == 0
    assert capsys.readouterr().out.startswith("Pruning is off ([retention] usage_days = 0: usage rows are kept for ever).")


async def test_a_log_pruned_to_its_last_row_keeps_handing_out_new_ids(db_url):
    """SQLite gives a new row the largest id + 1: the row of the largest id stays, so a
    row written after a prune never gets an id the rollup already passed."""
    settings = Retention(usage_days=10, batch_rows=100, batch_pause_seconds=0)
    async with open_admin(db_url, CORE_MIGRATIONS) as port:
        await seed_people(db_url)
        old = [(f"old_{n}", NOW - 20 * DAY + n, 1, 1, "m1", 1, "ch1", 200, 10, 5, 100) for n in range(250)]
        await execute(db_url, INSERT, old)
        report = await retention.prune(Admin(port), settings, now=NOW, margin=0.0)
        assert report.pruned == 249 and report.rolled_id == 250
        assert await execute(db_url, "SELECT id FROM usage_logs") == [(250,)]
        await execute(db_url, INSERT, [(f"new_{n}", NOW - DAY + n, 1, 1, "m1", 1, "ch1", 200, 10, 5, 100) for n in range(3)])
        assert [row[0] for row in await execute(db_url, "SELECT id FROM usage_logs ORDER BY id")] == [250, 251, 252, 253]
        assert await retention.roll_up(Admin(port), settings, now=NOW, margin=0.0) == 253
        totals = await port.usage_totals("model", NOW // HOUR * HOUR - 30 * DAY, 10)
        assert [(t.label, t.requests, t.cost_micros) for t in totals] == [("m1", 253, 25_300)]
