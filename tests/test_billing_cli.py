"""``relaygate wallet show|adjust``, ``relaygate logs``, ``relaygate check`` and the
per-unit flags of ``relaygate price set``."""

from __future__ import annotations

import json
import time

import pytest

from gateway_core.commands.cli import main
from gateway_core.records import UsageRow
from gateway_core.store import CORE_MIGRATIONS, Store, keys, usage, users, wallet

PLUGINS_TOML = "load = []\n"


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``cli(*argv)`` → (status, stdout, stderr) on a fresh database; ``cli.conn()`` opens it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELAYGATE_DB", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    (tmp_path / "plugins.toml").write_text(PLUGINS_TOML)
    db = str(tmp_path / "gw.db")
    store = Store(db, CORE_MIGRATIONS)
    store.migrate()

    def run(*argv):
        status = main([*argv, "--db", db])
        out, err = capsys.readouterr()
        return status, out, err

    run.conn = store.connect
    return run


@pytest.fixture
def billed(cli):
    """alice with a top-up, a settled request, an open reservation and 30 usage rows."""
    conn = cli.conn()
    user_id = users.add_user(conn, "alice")
    key_id, _ = keys.create_key(conn, user_id, name="ci", group="default")
    other_key, _ = keys.create_key(conn, user_id, name="other", group="default")
    wallet.topup(conn, user_id, 5_000_000, "first")
    wallet.hold(conn, user_id, 300_000, "req_a", key_id)
    wallet.settle(conn, user_id, request_id="req_a", cost_micros=123_456, key_id=key_id)
    wallet.hold(conn, user_id, 200_000, "req_b", key_id)
    now = time.time()
    for n in range(30):
        usage.insert_usage(conn, UsageRow(
            request_id=f"req_{n:02d}", started_at=now - 3600 + n * 60, protocol="openai", endpoint="chat",
            user_id=user_id, key_id=key_id if n % 2 else other_key, key_name="ci" if n % 2 else "other",
            model="m-big" if n % 3 == 0 else "m-small", status=200 if n % 5 else 429,
            input_tokens=n, output_tokens=2 * n, cost_micros=n * 10, duration_ms=n * 1.0001,
        ))  # fmt: skip
    conn.close()
    return user_id, key_id, other_key


def test_wallet_show_prints_balance_reservations_and_latest_ledger_rows(cli, billed):
    status, out, err = cli("wallet", "show", "alice", "--limit", "1")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == "alice (id 1): balance 4.876544 USD; 0.20 USD held by 1 request(s) in progress, 4.676544 USD available"
    assert lines[1].split() == ["id", "created_at", "kind", "amount_usd", "balance_after_usd", "request_id", "key_id", "note"]
    assert lines[2].split()[3] == "capture"  # money that moved only: no hold or release rows
    assert " -0.123456 " in lines[2]
    assert lines[3] == "older rows: --before 2"
    status, out, _ = cli("wallet", "show", "alice", "--before", "2")
    assert [line.split()[3] for line in out.splitlines()[2:]] == ["topup"]


def test_wallet_show_json(cli, billed):
    status, out, _ = cli("wallet", "show", "alice", "--json", "--limit", "2")
    data = json.loads(out)
    assert (data["balance_micros"], data["held_micros"], data["available_micros"], data["open_holds"]) == (4_876_544, 200_000, 4_676_544, 1)
    assert [row["kind"] for row in data["ledger"]] == ["capture", "topup"]  # money that moved only
    assert data["ledger"][0] == {**data["ledger"][0], "amount_micros": -123_456, "balance_after_micros": 4_876_544, "request_id": "req_a", "key_id": billed[1]}
    [hold] = data["holds"]  # the open reservation, apart from the ledger
    assert hold == {**hold, "request_id": "req_b", "amount_micros": 200_000, "key_id": billed[1], "user_id": billed[0]}


def test_wallet_adjust_is_a_signed_ledger_row_with_its_note(cli, billed):
    status, out, err = cli("wallet", "adjust", "alice", "-1.5", "--note", "refund of a duplicate top-up")
    assert status == 0, err
    assert "balance is now 3.376544 USD" in out
    status, out, _ = cli("wallet", "show", "alice", "--json", "--limit", "1")
    row = json.loads(out)["ledger"][0]
    assert (row["kind"], row["amount_micros"], row["note"]) == ("adjustment", -1_500_000, "refund of a duplicate top-up")
    status, _, err = cli("wallet", "adjust", "alice", "0", "--note", "x")
    assert status == 2 and "must not be zero" in err
    status, _, err = cli("wallet", "adjust", "alice", "1")
    assert status == 2 and "--note" in err


def test_logs_filter_and_page_newest_first(cli, billed):
    user_id, key_id, other_key = billed
    status, out, err = cli("logs", "--json", "--limit", "1000")
    assert status == 0, err
    assert [row["request_id"] for row in json.loads(out)] == [f"req_{n:02d}" for n in range(29, -1, -1)]

    def ids(*argv):
        status, out, err = cli("logs", "--json", *argv)
        assert status == 0, err
        return [int(row["request_id"][4:]) for row in json.loads(out)]

    assert ids("--key", str(key_id)) == [n for n in range(29, -1, -1) if n % 2]
    assert ids("--model", "m-big") == [n for n in range(29, -1, -1) if n % 3 == 0]
    assert ids("--status", "429") == [25, 20, 15, 10, 5, 0]
    assert ids("--user", "alice", "--status", "429", "--key", str(other_key)) == [20, 10, 0]
    assert ids("--since", "36m") == [29, 28, 27, 26, 25]  # the newest row is 31 minutes old
    conn = cli.conn()
    start = conn.execute("SELECT created_at FROM usage_logs WHERE request_id = 'req_00'").fetchone()[0]
    conn.close()
    assert ids("--since", repr(start + 60 * 5), "--until", repr(start + 60 * 8)) == [7, 6, 5]
    assert ids("--since", "2000-01-01") == ids()

    pages, argv = [], ["--limit", "7"]
    while True:
        status, out, _ = cli("logs", *argv)
        lines = out.splitlines()
        if lines == ["(none)"]:
            break
        rows = [line for line in lines[1:] if line.startswith("20")]
        pages.append(len(rows))
        if not lines[-1].startswith("next page: --before "):
            break
        argv = ["--limit", "7", "--before", lines[-1].split()[-1]]
    assert pages == [7, 7, 7, 7, 2]


def test_logs_text_shows_money_and_times(cli, billed):
    status, out, _ = cli("logs", "--limit", "1")
    header, row, cursor = out.splitlines()
    assert header.split()[:4] == ["created_at", "request_id", "key_id", "key_name"]
    assert "req_29" in row and " 0.00029 " in row and "cost_usd" in header.split()  # the unit in the heading
    assert row.split()[-1] == "29.00"  # the duration in ms, to two places (29.0029 stored)
    assert cursor.startswith("next page: --before ")


def test_logs_reject_bad_arguments(cli):
    for argv, fragment in ((["--since", "yesterday"]), "expected a time"), ((["--before", "x"]), "not a page cursor"), ((["--limit", "0"]), "between 1 and 1000"):
        status, out, err = cli("logs", *argv)
        assert status == 2 and fragment in err and "Traceback" not in err


def test_check_passes_on_a_consistent_database(cli, billed):
    status, out, err = cli("check")
    assert status == 0, out + err
    assert "Checked 1 user(s), 2 key(s), 2 ledger row(s); 1 open reservation(s) hold 0.20 USD" in out
    assert out.splitlines()[-1].startswith("OK:")
    status, out, _ = cli("check", "--json")
    data = json.loads(out)
    assert (data["ok"], data["problems"], data["open_holds"], data["held_micros"]) == (True, [], 1, 200_000)


def test_check_exits_non_zero_with_a_report_when_money_does_not_add_up(cli, billed):
    conn = cli.conn()
    conn.execute("UPDATE users SET balance_micros = balance_micros + 10 WHERE name = 'alice'")
    conn.execute("UPDATE api_keys SET used_micros = 7 WHERE name = 'other'")
    conn.execute("UPDATE users SET held_micros = 150000 WHERE name = 'alice'")
    conn.close()
    status, out, _ = cli("check")
    assert status == 1
    assert "PROBLEM [balance] user 'alice' (id 1): balance differs from the sum of its ledger rows: expected 4.876544 USD, found 4.876554 USD" in out
    assert "PROBLEM [key_used] key 2 ('other'): used amount differs from the sum of its charges: expected 0.00 USD, found 0.000007 USD" in out
    assert "PROBLEM [holds] user 'alice' (id 1): held amount differs from the sum of its open reservations: expected 0.20 USD, found 0.15 USD" in out
    assert out.splitlines()[-1] == "3 problem(s) found."
    status, out, _ = cli("check", "--json")
    assert status == 1 and {p["check"] for p in json.loads(out)["problems"]} == {"balance", "key_used", "holds"}


def test_price_set_per_unit_prices(cli):
    status, out, err = cli("price", "set", "img-1", "--per-image", "0.04")
    assert status == 0, err
    assert out.strip() == "img-1: input 0.00 USD, output 0.00 USD per million tokens; 0.04 USD per image"
    status, out, _ = cli("price", "set", "tts-1", "--per-mchars", "15", "--json")
    assert json.loads(out)["per_mchar_micros"] == 15_000_000
    status, out, _ = cli("price", "set", "whisper-1", "--per-audio-minute", "0.006", "--json")
    assert json.loads(out)["per_audio_minute_micros"] == 6_000
    status, _, err = cli("price", "set", "chat-1", "--input", "1")
    assert status == 2 and "--input and --output are required" in err
