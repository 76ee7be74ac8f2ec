"""``relaygate channel add|list|edit|enable|disable|delete|test``: the records they
change, health in the listing, and upstream keys never printed after entry."""

from __future__ import annotations

import asyncio
import json

import pytest

from gateway_core.commands.cli import main
from gateway_core.records import key_fingerprint
from gateway_core.store import CORE_MIGRATIONS, Store, channels
from gateway_core.store.request_store import BreakerReport
from gateway_core.store.channel_health import save_breaker
from gateway_core.testing import free_port
from gateway_openai.fake_upstream import EXPECTED_KEY, FakeOpenAI

KEY_A = "sk-upstream-aaaaaaaa1111"
KEY_B = "sk-upstream-bbbbbbbb2222"
KEY_C = "sk-upstream-cccccccc3333"
SECRETS = ("aaaaaaaa", "bbbbbbbb", "cccccccc", EXPECTED_KEY)


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``cli(*argv)`` → (status, stdout, stderr) with the openai and demo plugins."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELAYGATE_DB", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    (tmp_path / "plugins.toml").write_text('load = ["openai", "demo"]\n[gateway.timeouts]\nconnect = 2\nfirst_byte = 2\nidle = 2\n')
    db = str(tmp_path / "gw.db")
    assert main(["migrate", "--db", db]) == 0  # commands but init, serve and migrate need a database
    capsys.readouterr()

    def run(*argv):
        status = main([*argv, "--db", db])
        out, err = capsys.readouterr()
        for secret in SECRETS:
            assert secret not in out and secret not in err, f"an upstream key was printed: {argv}"
        return status, out, err

    run.db = db
    return run


def connect(db):
    store = Store(db, CORE_MIGRATIONS)
    store.migrate()
    return store.connect()


def stored(db, name):
    conn = connect(db)
    try:
        return channels.get_channel(conn, name)
    finally:
        conn.close()


def one_line_error(status, out, err, *fragments):
    assert status != 0 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err


def add_main(cli, *extra):
    status, out, err = cli(
        "channel", "add", "main", "--type", "openai", "--base-url", "https://api.example.com/v1",
        "--api-key", f"{KEY_A},{KEY_B}", "--models", "gpt-x", *extra,
    )  # fmt: skip
    assert status == 0, err
    return out


def test_add_takes_timeouts_concurrency_endpoints_and_headers(cli):
    out = add_main(cli, "--timeout-first-byte", "7.5", "--timeout-idle", "30", "--concurrency", "4",
                   "--endpoints", "chat", "--header", "OpenAI-Organization=org-secret-value", "--disabled", "--json")  # fmt: skip
    record = json.loads(out)
    assert record["api_keys"] == ["sk-u…1111", "sk-u…2222"] and record["enabled"] is False
    assert record["headers"] == {"OpenAI-Organization": "org-…alue"}
    channel = stored(cli.db, "main")
    assert (channel.timeout_first_byte, channel.timeout_idle, channel.timeout_connect) == (7.5, 30.0, None)
    assert (channel.concurrency, channel.endpoints) == (4, ("chat",))
    assert channel.headers == {"OpenAI-Organization": "org-secret-value"}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--timeout-first-byte", "0"), "more than 0"),
        (("--timeout-idle", "soon"), "expected seconds"),
        (("--concurrency", "-1"), "--concurrency must be a whole number from 0 (no cap) to 1000000, got -1"),  # the admin layer's words
        (("--endpoints", "chat,teleport"), "unknown endpoint(s) teleport"),
        (("--header", "novalue"), "NAME=VALUE"),
    ],
)
def test_add_refuses_bad_options_in_one_line(cli, args, fragment):
    one_line_error(*cli("channel", "add", "x", "--type", "openai", "--base-url", "https://x", "--models", "m", *args), fragment)


def test_edit_changes_only_what_is_given(cli):
    add_main(cli, "--priority", "3", "--timeout-first-byte", "9")
    status, out, _ = cli(
        "channel", "edit", "main", "--base-url", "https://other.example.com/v1/", "--models", "gpt-y,gpt-z",
        "--groups", "default,vip", "--weight", "5", "--model-map", "gpt-y=gpt-y-2026", "--endpoints", "chat",
        "--timeout-first-byte", "default", "--timeout-connect", "3", "--concurrency", "2",
    )  # fmt: skip
    assert status == 0 and "Changed channel 'main'" in out
    channel = stored(cli.db, "main")
    assert channel.base_url == "https://other.example.com"
    assert (channel.models, channel.groups, channel.priority, channel.weight) == (("gpt-y", "gpt-z"), ("default", "vip"), 3, 5)
    assert channel.model_map == {"gpt-y": "gpt-y-2026"} and channel.endpoints == ("chat",)
    assert (channel.timeout_first_byte, channel.timeout_connect, channel.concurrency) == (None, 3.0, 2)
    assert channel.api_keys == (KEY_A, KEY_B)  # untouched
    status, out, _ = cli("channel", "edit", "main", "--rename", "primary", "--json")
    assert status == 0 and json.loads(out)["name"] == "primary" and stored(cli.db, "main") is None


def test_edit_refuses_nothing_and_unknown_channels(cli):
    add_main(cli)
    one_line_error(*cli("channel", "edit", "main"), "nothing to change")
    one_line_error(*cli("channel", "edit", "nope", "--weight", "2"), "no channel named 'nope'")
    one_line_error(*cli("channel", "edit", "main", "--weight", "-2"), "--weight must be a whole number from 0 to 1000000, got -2")


def test_new_keys_keep_the_disabled_marks_of_the_keys_they_keep(cli):
    add_main(cli)
    conn = connect(cli.db)
    channel = channels.get_channel(conn, "main")
    channels.disable_channel_key(conn, channel.id, key_fingerprint(KEY_B), 1, "upstream answered 401: revoked")
    channels.disable_channel_key(conn, channel.id, key_fingerprint(KEY_A), 0, "upstream answered 403: banned")
    conn.close()
    status, _, _ = cli("channel", "edit", "main", "--api-key", KEY_C, "--api-key", KEY_B)
    assert status == 0
    channel = stored(cli.db, "main")
    assert channel.api_keys == (KEY_C, KEY_B)
    (mark,) = channel.disabled_keys  # KEY_A's mark went with it; KEY_B's moved to its new place
    assert (mark.index, mark.reason) == (1, "upstream answered 401: revoked")


def test_list_shows_breakers_and_disabled_keys_and_enable_restores_keys(cli):
    add_main(cli)
    conn = connect(cli.db)
    channel = channels.get_channel(conn, "main")
    channels.disable_channel_key(conn, channel.id, key_fingerprint(KEY_B), 1, "upstream answered 401: Incorrect API key provided")
    save_breaker(conn, BreakerReport(channel.id, "", None, "open", 3, 1.0, 4102444800.0, "the upstream failed (500): boom", "host:1", 2.0))
    conn.close()
    status, out, _ = cli("channel", "list")
    assert status == 0
    assert "open until" in out and "3 failure(s)" in out and "(500): boom" in out
    assert "#0 sk-u…1111 ok" in out and "#1 sk-u…2222 disabled (upstream answered 401: Incorrect API key provided)" in out
    status, out, _ = cli("channel", "list", "--json")
    (record,) = json.loads(out)
    assert record["health"]["state"] == "open" and record["health"]["breaker"]["failures"] == 3
    assert [k["state"] for k in record["health"]["keys"]] == ["ok", "disabled"]
    assert record["disabled_keys"][0]["index"] == 1 and "fingerprint" not in record["disabled_keys"][0]
    status, out, _ = cli("channel", "enable", "main")
    assert status == 0 and "in use again: #1" in out
    assert stored(cli.db, "main").disabled_keys == ()


def test_disable_enable_and_delete(cli):
    add_main(cli)
    assert cli("channel", "disable", "main")[0] == 0 and stored(cli.db, "main").enabled is False
    status, out, _ = cli("channel", "list")
    assert "disabled by an operator" in out
    assert cli("channel", "enable", "main")[0] == 0 and stored(cli.db, "main").enabled is True
    status, out, _ = cli("channel", "delete", "main", "--json")
    assert status == 0 and json.loads(out)["deleted"] is True and stored(cli.db, "main") is None
    one_line_error(*cli("channel", "delete", "main"), "no channel named 'main'")


# --- channel test: a real request --------------------------------------------------------------


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


async def test_channel_test_sends_a_real_request_and_prints_status_and_latency(cli, upstream):
    await asyncio.to_thread(cli, "channel", "add", "up", "--type", "openai", "--base-url", upstream.url,
                            "--api-key", f"sk-wrong-0123456789,{EXPECTED_KEY}", "--models", "gpt-x", "--model-map", "gpt-x=gpt-x-2026")  # fmt: skip
    status, out, _ = await asyncio.to_thread(cli, "channel", "test", "up", "--key", "1")
    assert status == 0 and out.startswith("up: OK, HTTP 200 in ") and " ms (model gpt-x, key #1)" in out and "echo: ping" in out
    assert upstream.requests[-1]["body"]["model"] == "gpt-x-2026"
    status, out, _ = await asyncio.to_thread(cli, "channel", "test", "up", "--json")  # key #0: refused
    result = json.loads(out)
    assert status == 1 and (result["ok"], result["status"], result["key_index"]) == (False, 401, 0)
    assert result["latency_ms"] > 0 and "Incorrect API key" in result["message"]


async def test_channel_test_of_an_unreachable_channel_fails_in_one_line(cli):
    await asyncio.to_thread(cli, "channel", "add", "down", "--type", "openai", "--base-url", f"http://127.0.0.1:{free_port()}", "--models", "m")
    status, out, _ = await asyncio.to_thread(cli, "channel", "test", "down")
    assert status == 1 and out.startswith("down: FAILED, no HTTP answer in ") and "could not connect" in out and out.count("\n") == 1
    status, out, _ = await asyncio.to_thread(cli, "channel", "test", "down", "--key", "3")
    assert status == 1 and "no upstream key #3" in out


def test_channel_test_of_the_demo_channel(cli):
    assert cli("channel", "add", "demo", "--type", "demo", "--base-url", "local://demo", "--models", "demo-chat")[0] == 0
    status, out, _ = cli("channel", "test", "demo")
    assert status == 0 and "OK, HTTP 200" in out and "key #" not in out



# --- settings: --setting, --unset-setting, channel types --------------------------------------


def test_settings_are_set_listed_and_unset(cli):
    add_main(cli, "--setting", "responses=yes")
    assert stored(cli.db, "main").settings == {"responses": True}
    status, out, _ = cli("channel", "list", "--json")
    assert status == 0 and json.loads(out)[0]["settings"] == {"responses": True}
    status, out, _ = cli("channel", "edit", "main", "--setting", "responses=off")
    assert status == 0 and "Changed channel 'main': settings." in out
    assert stored(cli.db, "main").settings == {"responses": False}
    status, out, _ = cli("channel", "edit", "main", "--unset-setting", "responses", "--json")
    assert status == 0 and json.loads(out)["settings"] == {} and stored(cli.db, "main").settings == {}
    assert cli("channel", "add", "d", "--type", "demo", "--base-url", "local://demo", "--models", "m", "--setting", "delay_ms=5")[0] == 0
    assert stored(cli.db, "d").settings == {"delay_ms": 5}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--setting", "responses=maybe"), "relaygate channel edit: setting 'responses' must be true or false"),
        (("--setting", "delay_ms=5"), "unknown setting 'delay_ms' (known: responses, max_tokens_param, forward_traceparent)"),
        (("--setting", "responses"), "--setting looks like NAME=VALUE, got 'responses'…"),
        (("--unset-setting", "responses"), "cannot unset 'responses': not set (the channel sets: none)"),
    ],
)
def test_bad_settings_are_refused_in_one_line(cli, args, fragment):
    add_main(cli)
    status, out, err = cli("channel", "edit", "main", *args)
    one_line_error(status, out, err, fragment)
    assert status == 2 and stored(cli.db, "main").settings == {}


def test_channel_types_lists_the_loaded_types_and_their_settings(cli):
    status, out, _ = cli("channel", "types")
    assert status == 0
    assert "demo: chat\n  delay_ms  a whole number from 0 to 60000 (default: 30). milliseconds between streamed words\n" in out
    assert "openai: chat, responses, embeddings" in out and "  responses         true or false (default: not set). whether" in out
    assert out.endswith("every type:\n  forward_traceparent  true or false (default: false). send each request's W3C traceparent"
                        " and tracestate to this channel's upstream (off: they never leave the gateway)\n")
    status, out, _ = cli("channel", "types", "--json")
    types = {t["name"]: t for t in json.loads(out)}
    assert set(types) == {"demo", "openai", "rerank"} and types["demo"]["endpoints"] == ["chat"]
    assert types["rerank"]["endpoints"] == ["rerank"] and "moderations" in types["openai"]["endpoints"]
    (delay,) = types["demo"]["settings"]
    assert (delay["name"], delay["kind"], delay["default"], delay["min"], delay["max"]) == ("delay_ms", "int", 30, 0, 60000)
    assert delay["accepts"] == "a whole number from 0 to 60000" and delay["help"] == "milliseconds between streamed words"
