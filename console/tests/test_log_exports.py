"""The console's exports of the usage log carry every row: a user's own and an
operator's, as CSV and JSON lines, compared row by row with the table (more
rows than the largest page, several to each second)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from gateway_core.admin.usage import MAX_PAGE

pytestmark = pytest.mark.usefixtures("users")
T0 = 1_790_000_000.0


def fill(seed, users: dict[str, int], count: int) -> None:
    conn = seed.store.connect()
    with conn:
        conn.executemany(
            "INSERT INTO usage_logs (request_id, created_at, user_id, model, status, input_tokens, output_tokens, cost_micros, duration_ms) "
            "VALUES (?, ?, ?, 'demo-chat', 200, ?, 1, ?, ?)",
            [(f"req_console_{n:05d}", T0 + n // 4, users["alice" if n % 5 else "bob"], n, 3 * n + 1, n / 7) for n in range(count)],
        )
    conn.close()


def table(seed, where: str = "", params: tuple = ()) -> list[dict]:
    return seed.rows(f"SELECT * FROM usage_logs {where} ORDER BY created_at DESC, id DESC", params)


def check(exported: list[dict], rows: list[dict], names: dict[int, str] | None) -> None:
    assert [row["request_id"] for row in exported] == [row["request_id"] for row in rows]
    for got, want in zip(exported, rows):
        assert int(got["cost_micros"]) == want["cost_micros"] and int(got["input_tokens"]) == want["input_tokens"]
        assert float(got["duration_ms"]) == round(want["duration_ms"], 2) and str(got["created_at"]).endswith("Z")
        if names is None:
            assert "user" not in got and "channel_name" not in got
        else:
            assert got["user"] == names[want["user_id"]]


async def test_each_export_carries_every_row_of_its_filter(browsers, seed, users):
    fill(seed, users, 2_300)
    names = {user_id: name for name, user_id in users.items()}
    alice, root = await browsers("alice"), await browsers("root")
    own = table(seed, "WHERE user_id = ?", (users["alice"],))
    assert len(own) > MAX_PAGE
    status, text = await alice.get("/console/logs/export.csv")
    assert status == 200
    check(list(csv.DictReader(io.StringIO(text))), own, None)
    status, text = await alice.get("/console/logs/export.jsonl")
    check([json.loads(line) for line in text.splitlines()], own, None)

    everyone = table(seed)
    status, text = await root.get("/console/admin/logs/export.csv")
    check(list(csv.DictReader(io.StringIO(text))), everyone, names)
    status, text = await root.get(f"/console/admin/logs/export.jsonl?user={users['bob']}")
    check([json.loads(line) for line in text.splitlines()], table(seed, "WHERE user_id = ?", (users["bob"],)), names)
    status, _ = await alice.get("/console/admin/logs/export.csv", allow_redirects=False)
    assert status in (302, 303, 403)
    _, page = await alice.get("/console/logs")
    assert 'href="/console/logs/export.csv"' in page and 'href="/console/logs/export.jsonl"' in page
