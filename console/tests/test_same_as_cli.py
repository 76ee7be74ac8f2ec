"""The console and the CLI do the same thing: both call the admin layer.

Each test makes a change once through the console's pages (real loopback HTTP
against a running gateway) and once through ``relaygate`` (the real ``main()``),
on twin records, and compares what is stored. Each covers a drift the two had
before they shared the admin layer.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from gateway_core.cli import main
from gateway_core.records import key_fingerprint
from gateway_core.request_store import BreakerReport
from gateway_core.store.channel_health import save_breaker
from gateway_core.store.channels import disable_channel_key

pytestmark = pytest.mark.usefixtures("users")

KEY_A, KEY_B, KEY_C = "sk-upstream-aaaaaaaa1111", "sk-upstream-bbbbbbbb2222", "sk-upstream-cccccccc3333"


@pytest.fixture
def cli(seed, tmp_path, capsys):
    """``await cli(*argv)`` → (status, stdout, stderr) of ``relaygate`` on the gateway's database."""
    plugins = tmp_path / "every-plugin.toml"
    plugins.write_text("# every installed plugin\n")

    async def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = await asyncio.to_thread(main, [*argv, "--db", seed.config.db_path, "--plugins", str(plugins)])
        out, err = capsys.readouterr()
        return status, out, err

    return run


def twin_channels(seed, *names: str) -> dict[str, int]:
    """Channels with two upstream keys each: the second disabled, both keys' and
    the channel's breakers reported open."""
    ids = {}
    for name in names:
        channel_id = seed.channel(name, type="demo", base_url="local://demo", models=["demo-chat"], api_keys=(KEY_A, KEY_B))
        seed._write(disable_channel_key, channel_id, key_fingerprint(KEY_B), 1, "upstream answered 401: revoked")
        for slot, index in (("", None), (key_fingerprint(KEY_A), 0), (key_fingerprint(KEY_B), 1)):
            seed._write(save_breaker, BreakerReport(channel_id, slot, index, "open", 3, 1.0, time.time() + 600, "boom", "w:1", 2.0))
        ids[name] = channel_id
    return ids


def channel_state(seed, channel_id: int) -> dict:
    """What enable, edit and delete change: the channel row's state and its breaker rows."""
    rows = seed.rows("SELECT enabled, api_keys, disabled_keys, groups FROM channels WHERE id = ?", (channel_id,))
    marks = [(m["index"], m["reason"]) for m in json.loads(rows[0]["disabled_keys"])] if rows else None
    slots = [row["key_slot"] for row in seed.rows("SELECT key_slot FROM channel_health WHERE channel_id = ? ORDER BY key_slot", (channel_id,))]
    return {"exists": bool(rows), **({k: rows[0][k] for k in ("enabled", "api_keys", "groups")} if rows else {}), "marks": marks, "slots": slots}


async def test_deleting_a_channel_removes_its_health_rows_in_both(seed, browsers, cli):
    ids = twin_channels(seed, "by-console", "by-cli")
    root = await browsers("root")
    status, _ = await root.post(f"/console/admin/channels/{ids['by-console']}/delete", {}, csrf_from="/console/admin/channels")
    assert status == 200
    assert (await cli("channel", "delete", "by-cli"))[0] == 0
    gone = {"exists": False, "marks": None, "slots": []}
    assert channel_state(seed, ids["by-console"]) == channel_state(seed, ids["by-cli"]) == gone
    assert seed.rows("SELECT count(*) AS n FROM channel_health") == [{"n": 0}]


async def test_enable_puts_the_disabled_keys_back_in_both(seed, browsers, cli):
    ids = twin_channels(seed, "by-console", "by-cli")
    root = await browsers("root")
    for channel_id in ids.values():
        await root.post(f"/console/admin/channels/{channel_id}/disable", {}, csrf_from="/console/admin/channels")
    assert channel_state(seed, ids["by-console"])["enabled"] == 0
    status, _ = await root.post(f"/console/admin/channels/{ids['by-console']}/enable", {}, csrf_from="/console/admin/channels")
    assert status == 200
    status, out, _ = await cli("channel", "enable", "by-cli")
    assert status == 0 and "in use again: #1" in out
    by_console, by_cli = channel_state(seed, ids["by-console"]), channel_state(seed, ids["by-cli"])
    assert by_console == by_cli
    assert (by_console["enabled"], by_console["marks"], by_console["slots"]) == (1, [], [""])  # keys' breakers forgotten
    _, page = await root.get("/console/admin/channels")
    assert "upstream answered 401: revoked" not in page


def edit_form(channel_id: int, seed, **changes: str) -> dict[str, str]:
    stored = seed.rows("SELECT name, base_url, models, groups FROM channels WHERE id = ?", (channel_id,))[0]
    form = {"name": stored["name"], "type": "demo", "base_url": stored["base_url"], "models": ", ".join(json.loads(stored["models"])),
            "groups": ", ".join(json.loads(stored["groups"])), "priority": "0", "weight": "1", "enabled": "on", "api_keys": ""}  # fmt: skip
    return {**form, **changes}


async def test_an_edit_validates_creates_groups_and_keeps_the_marks_of_kept_keys_in_both(seed, browsers, cli):
    ids = twin_channels(seed, "by-console", "by-cli")
    root = await browsers("root")
    path = f"/console/admin/channels/{ids['by-console']}/edit"
    before = channel_state(seed, ids["by-console"])

    status, page = await root.post(path, edit_form(ids["by-console"], seed, base_url="nowhere"), csrf_from=path)
    assert status == 400 and "must be a URL like https://api.example.com" in page
    status, _, err = await cli("channel", "edit", "by-cli", "--base-url", "nowhere")
    assert status == 2 and "--base-url must be a URL like https://api.example.com" in err
    assert channel_state(seed, ids["by-console"]) == before

    changes = {"api_keys": f"{KEY_C}\n{KEY_B}", "groups": "default, fresh"}
    status, _ = await root.post(path, edit_form(ids["by-console"], seed, **changes), csrf_from=path)
    assert status == 200
    status, _, err = await cli("channel", "edit", "by-cli", "--api-key", f"{KEY_C},{KEY_B}", "--groups", "default,fresh")
    assert status == 0, err
    by_console, by_cli = channel_state(seed, ids["by-console"]), channel_state(seed, ids["by-cli"])
    assert by_console == by_cli
    # KEY_A's breaker and mark go with it; KEY_B's mark follows it to its new place
    assert json.loads(by_console["api_keys"]) == [KEY_C, KEY_B] and by_console["marks"] == [(1, "upstream answered 401: revoked")]
    assert seed.rows('SELECT name FROM "groups" WHERE name = ?', ("fresh",)) == [{"name": "fresh"}]


async def test_group_limits_are_stored_the_same_way_by_both(seed, browsers, cli):
    root = await browsers("root")
    form = {"name": "vip-console", "ratio": "0.8", "rpm": "60", "tpm": "", "concurrency": "2"}
    status, page = await root.post("/console/admin/groups", form, csrf_from="/console/admin/groups")
    assert status == 200 and 'data-group="vip-console"' in page
    status, _, err = await cli("group", "set", "vip-cli", "--ratio", "0.8", "--rpm", "60", "--concurrency", "2")
    assert status == 0, err
    stored = seed.rows('SELECT name, ratio_ppm, rpm, tpm, concurrency FROM "groups" WHERE name LIKE ? ORDER BY name', ("vip-%",))
    assert [{**row, "name": None} for row in stored] == [{"name": None, "ratio_ppm": 800_000, "rpm": 60, "tpm": None, "concurrency": 2}] * 2
    _, listed, _ = await cli("group", "list", "--json")
    by_name = {group["name"]: group for group in json.loads(listed)}
    assert {**by_name["vip-console"], "name": None} == {**by_name["vip-cli"], "name": None}
    status, page = await root.post("/console/admin/groups", {**form, "ratio": "-1"}, csrf_from="/console/admin/groups")
    assert status == 400 and "must be a number &gt;= 0" in page
    status, _, err = await cli("group", "set", "vip-cli", "--ratio", "-1")
    assert status == 2 and "--ratio must be a number >= 0" in err


def add_requests(seed, user_id: int, created: list[float]) -> None:
    """Usage rows in the order given (ids ascending), each created at its time."""
    conn = seed.store.connect()
    conn.executemany(
        "INSERT INTO usage_logs (request_id, created_at, user_id, model, status) VALUES (?, ?, ?, 'm', ?)",
        [(f"req_page_{n:03d}", at, user_id, 500 if n % 4 == 0 else 200) for n, at in enumerate(created)],
    )
    conn.commit()
    conn.close()


async def console_pages(browser, path: str) -> list[list[str]]:
    """Every page of a console log listing, following its "Older" links."""
    pages = []
    while path:
        _, page = await browser.get(path)
        ids = re.findall(r'data-log-id="(\d+)"', page)
        rows = seed_request_ids(page)
        assert len(rows) == len(ids)
        pages.append(rows)
        found = re.search(r'href="([^"]+)" rel="next"', page)
        path = found.group(1).replace("&amp;", "&") if found else ""
    return pages


def seed_request_ids(page: str) -> list[str]:
    return re.findall(r"req_page_\d{3}", page.split("<tbody", 1)[-1])


async def cli_pages(cli, *argv: str) -> list[list[str]]:
    pages, cursor = [], []
    while True:
        status, out, err = await cli("logs", "--limit", "50", *argv, *cursor)
        assert status == 0, err
        pages.append(re.findall(r"req_page_\d{3}", out))
        last = out.splitlines()[-1] if out else ""
        if not last.startswith("next page: --before "):
            return pages
        cursor = ["--before", last.split()[-1]]


async def test_the_console_pages_the_log_with_the_clis_pager(seed, users, browsers, cli):
    now = time.time()
    # a long request recorded after short ones started later: ids and start times disagree
    created = [now - 1000 + n for n in range(60)] + [now - 2000 + n for n in range(50)]
    add_requests(seed, users["alice"], created)
    newest_first = [f"req_page_{n:03d}" for n in sorted(range(len(created)), key=lambda n: -created[n])]
    root = await browsers("root")
    by_console = await console_pages(root, f"/console/admin/logs?user={users['alice']}")
    by_cli = await cli_pages(cli, "--user", "alice")
    assert by_console == by_cli and [len(page) for page in by_console] == [50, 50, 10]
    assert sum(by_console, []) == newest_first

    errors = [request for request in newest_first if int(request[-3:]) % 4 == 0]
    _, page = await root.get(f"/console/admin/logs?user={users['alice']}&status=errors")
    assert seed_request_ids(page) == errors[:50] and "Older" not in page
    status, page = await root.get("/console/admin/logs?before=nonsense")
    assert status == 400 and "not a page of this log" in page
