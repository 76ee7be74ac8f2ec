"""The console and the CLI do the same thing: both call the admin layer.

Each test makes a change once through the console's pages (real loopback HTTP
against a running gateway) and once through ``relaygate`` (the real ``main()``),
on twin records, and compares what is stored. Each covers a drift the two had
before they shared the admin layer.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import time

import pytest

from gateway_core.commands.cli import main
from gateway_core.records import key_fingerprint
from gateway_core.store.request_store import BreakerReport
from gateway_core.store.channel_health import save_breaker
from gateway_core.store.channels import add_channel
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


# --- channel settings, timeouts, concurrency and headers -----------------------------------------


def channel_options(seed, name: str) -> dict:
    """What the channel form's settings, timeouts, concurrency and headers fields store."""
    (row,) = seed.rows(
        "SELECT type, settings, headers, concurrency, timeout_connect, timeout_first_byte, timeout_idle FROM channels WHERE name = ?", (name,)
    )
    return {**row, "settings": json.loads(row["settings"]), "headers": json.loads(row["headers"])}


def channel_form(name: str, **changes: str) -> dict[str, str]:
    form = {"name": name, "type": "demo", "base_url": "local://demo", "models": "demo-chat", "groups": "default", "priority": "0",
            "weight": "1", "enabled": "on", "api_keys": "", "concurrency": "", "timeout_connect": "", "timeout_first_byte": "",
            "timeout_idle": "", "headers": ""}  # fmt: skip
    return {**form, **changes}


async def test_settings_timeouts_concurrency_and_headers_are_stored_the_same_way_by_both(seed, browsers, cli):
    root = await browsers("root")
    new = "/console/admin/channels/new"
    _, page = await root.get(new)
    assert 'name="setting.demo.delay_ms"' in page and 'name="setting.gemini.api_version"' in page  # drawn from each type's schema
    assert '<option value="v1alpha">v1alpha</option>' in page and 'name="timeout_first_byte"' in page
    form = channel_form("by-console", concurrency="3", timeout_first_byte="7.5", headers="X-Team: blue\nX-Org: org-secret-value",
                        **{"setting.demo.delay_ms": "250"})  # fmt: skip
    status, page = await root.post(new, form, csrf_from=new)
    assert status == 200 and "Created." in page
    status, _, err = await cli("channel", "add", "by-cli", "--type", "demo", "--base-url", "local://demo", "--models", "demo-chat",
                               "--concurrency", "3", "--timeout-first-byte", "7.5", "--header", "X-Team=blue",
                               "--header", "X-Org=org-secret-value", "--setting", "delay_ms=250")  # fmt: skip
    assert status == 0, err
    expected = {"type": "demo", "settings": {"delay_ms": 250}, "headers": {"X-Team": "blue", "X-Org": "org-secret-value"},
                "concurrency": 3, "timeout_connect": None, "timeout_first_byte": 7.5, "timeout_idle": None}  # fmt: skip
    assert channel_options(seed, "by-console") == channel_options(seed, "by-cli") == expected

    # the edit form shows header values masked only, and keeps those left masked
    channel_id = seed.rows("SELECT id FROM channels WHERE name = 'by-console'")[0]["id"]
    path = f"/console/admin/channels/{channel_id}/edit"
    _, page = await root.get(path)
    assert "org-secret-value" not in page and "X-Org: org-…alue" in page and 'value="250"' in page and 'value="7.5"' in page
    edit = channel_form("by-console", concurrency="3", headers="X-Team: red\nX-Org: org-…alue")
    status, page = await root.post(path, edit, csrf_from=path)  # delay_ms and the first-byte timeout emptied: back to defaults
    assert status == 200 and "Saved." in page
    status, _, err = await cli("channel", "edit", "by-cli", "--header", "X-Team=red", "--unset-setting", "delay_ms", "--timeout-first-byte", "default")
    assert status == 0, err
    expected = {**expected, "settings": {}, "headers": {"X-Team": "red", "X-Org": "org-secret-value"}, "timeout_first_byte": None}
    assert channel_options(seed, "by-console") == channel_options(seed, "by-cli") == expected


@pytest.mark.parametrize(
    ("field", "value", "option", "message", "named"),
    [
        ("setting.demo.delay_ms", "soon", ("--setting", "delay_ms=soon"), "setting 'delay_ms' must be a whole number from 0 to 60000, got 'soon'", ""),
        ("timeout_idle", "0", ("--timeout-idle", "0"), "must be more than 0 seconds", "timeout idle"),
        ("headers", "X Team: blue", ("--header", "X Team=blue"), "has a name that is not a valid HTTP header name: 'X Team'", "header"),
    ],
)  # fmt: skip
async def test_bad_options_are_refused_alike_and_the_form_keeps_what_was_typed(seed, browsers, cli, field, value, option, message, named):
    """The same message: the console names the field as people read it, the CLI as its option."""
    seed.channel("by-console", type="demo", base_url="local://demo", models=["demo-chat"])
    seed.channel("by-cli", type="demo", base_url="local://demo", models=["demo-chat"])
    before = channel_options(seed, "by-console")
    channel_id = seed.rows("SELECT id FROM channels WHERE name = 'by-console'")[0]["id"]
    path = f"/console/admin/channels/{channel_id}/edit"
    root = await browsers("root")
    form = channel_form("by-console", concurrency="4", models="demo-chat, demo-two", api_keys="sk-typed-key-0001", **{field: value})
    status, page = await root.post(path, form, csrf_from=path)
    assert status == 400 and f"{named} {message}".strip() in html.unescape(page)
    for typed in ('value="4"', 'value="demo-chat, demo-two"', "sk-typed-key-0001", html.escape(value, quote=False)):
        assert typed in page, typed
    status, _, err = await cli("channel", "edit", "by-cli", *option)
    shown = f"{option[0]} {message}" if named else message
    assert status == 2 and err == f"relaygate channel edit: {shown}\n"
    assert channel_options(seed, "by-console") == channel_options(seed, "by-cli") == before


async def test_a_bool_setting_and_a_type_not_loaded_in_the_form(seed, browsers):
    root = await browsers("root")
    new = "/console/admin/channels/new"
    form = channel_form("native", type="openai", base_url="http://127.0.0.1:9/v1", **{"setting.openai.responses": "true", "setting.demo.delay_ms": "5"})
    status, _ = await root.post(new, form, csrf_from=new)
    assert status == 200 and channel_options(seed, "native")["settings"] == {"responses": True}  # only the chosen type's fields count
    seed._write(add_channel, name="ghost", type="ollama", base_url="http://127.0.0.1:9", models=["tiny"], settings={"keep_alive": "10m"})
    channel_id = seed.rows("SELECT id FROM channels WHERE name = 'ghost'")[0]["id"]
    path = f"/console/admin/channels/{channel_id}/edit"
    _, page = await root.get(path)
    assert '<option value="ollama" selected>ollama (not loaded)</option>' in page and "settings are kept as they are (keep_alive)" in page
    status, page = await root.post(path, channel_form("ghost", type="ollama", base_url="http://127.0.0.1:9", models="tiny", priority="2"), csrf_from=path)
    assert status == 200 and "Saved." in page
    assert channel_options(seed, "ghost")["settings"] == {"keep_alive": "10m"}
    assert seed.rows("SELECT priority FROM channels WHERE name = 'ghost'") == [{"priority": 2}]


async def test_a_channel_without_an_upstream_key_shows_as_needing_one_in_both(seed, browsers, cli):
    keyless = seed.channel("keyless", type="openai", base_url="https://api.example.com/v1", models=["demo-chat"], api_keys=())
    seed.channel("local-demo", type="demo", base_url="local://demo", models=["demo-chat"], api_keys=())  # needs none
    status, out, _ = await cli("channel", "list", "--json")
    health = {row["name"]: row["health"]["state"] for row in json.loads(out)}
    assert status == 0 and (health["keyless"], health["local-demo"]) == ("no_key", "ok")
    status, out, _ = await cli("channel", "list")
    assert "needs an upstream key: it has none" in out
    root = await browsers("root")
    _, page = await root.get("/console/admin/channels")
    assert page.count('data-breaker="no_key"') == 1 and ">no key</span> <small>needs an upstream key: it has none<" in page
    _, dashboard = await root.get("/console/")
    assert '<span class="badge off">no key</span>' in dashboard
