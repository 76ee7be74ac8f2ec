"""Every write through a ``relaygate`` command is in the audit log, as the API's and
the console's are: via ``cli``, by the operating system's user, with the record
before and after; and ``wallet topup --idempotency-key`` credits once per key."""

from __future__ import annotations

import getpass
import json

import pytest

from gateway_core.billing import testing as kit
from gateway_core.commands.cli import main

PRICE = ("--input", "1", "--output", "2")


def run(capsys, seed, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main([*argv, "--db", seed.config.db_path])
    out, err = capsys.readouterr()
    return status, out, err


def audit_rows(seed) -> list[dict]:
    rows = seed.rows("SELECT via, user_id, user_name, action, target, before_json AS before, after_json AS after FROM audit_log ORDER BY id")
    return [{**row, "before": json.loads(row["before"]) if row["before"] else None, "after": json.loads(row["after"]) if row["after"] else None}
            for row in rows]  # fmt: skip


@pytest.mark.usefixtures("bundled_adapters")  # relaygate init makes a demo channel
def test_every_write_command_is_audited_as_the_cli(seed, capsys):
    steps = [
        ("user", "add", "carol"),
        ("wallet", "topup", "carol", "5", "--note", "invoice 7"),
        ("wallet", "adjust", "carol", "-1", "--note", "refund of a mistake"),
        ("group", "set", "vip", "--ratio", "1.5"),
        ("user", "limits", "carol", "--rpm", "30", "--daily-usd", "2"),
        ("price", "set", "m-1", *PRICE),
        ("channel", "add", "up", "--type", "demo", "--base-url", "local://demo", "--models", "m-1", "--api-key", "sk-upstream-secret"),
        ("channel", "edit", "up", "--priority", "3"),
        ("channel", "disable", "up"),
        ("channel", "enable", "up"),
        ("key", "create", "carol", "--name", "ci", "--json"),
    ]
    for argv in steps:
        status, _, err = run(capsys, seed, *argv)
        assert status == 0, (argv, err)
    key_id = json.loads(run(capsys, seed, "key", "list", "carol", "--json")[1])[0]["id"]
    for argv in (("key", "limits", str(key_id), "--weekly-usd", "3"), ("key", "cost-header", str(key_id), "on"),
                 ("key", "disable", str(key_id)), ("key", "enable", str(key_id)), ("key", "delete", str(key_id))):  # fmt: skip
        status, _, err = run(capsys, seed, *argv)
        assert status == 0, (argv, err)
    status, out, _ = run(capsys, seed, "code", "create", "--count", "1", "--value", "1", "--json")
    [code] = json.loads(out)
    assert status == 0 and run(capsys, seed, "channel", "delete", "up")[0] == 0
    assert run(capsys, seed, "code", "disable", str(code["id"]))[0] == 0
    assert run(capsys, seed, "user", "limits", "carol")[0] == 0  # only shows: no row
    assert run(capsys, seed, "key", "list", "carol")[0] == 0

    rows = audit_rows(seed)
    me = getpass.getuser()
    assert {(row["via"], row["user_id"], row["user_name"]) for row in rows} == {("cli", None, me)}
    actions = [row["action"] for row in rows]
    assert actions == [
        "user.create", "wallet.topup", "wallet.adjustment", "group.set", "user.limits", "price.set", "channel.create",
        "channel.update", "channel.disable", "channel.enable", "key.create", "key.limits", "key.cost_header", "key.disable",
        "key.enable", "key.delete", "code.create", "channel.delete", "code.disable",
    ]  # fmt: skip
    by_action = {row["action"]: row for row in rows}
    topup = by_action["wallet.topup"]
    assert topup["before"]["balance_micros"] == 0 and topup["after"]["balance_micros"] == 5_000_000
    assert topup["after"]["credit"]["note"] == "invoice 7"
    assert by_action["wallet.adjustment"]["after"]["balance_micros"] == 4_000_000
    assert by_action["user.limits"]["before"]["rpm"] is None and by_action["user.limits"]["after"]["daily_budget_micros"] == 2_000_000
    assert by_action["channel.update"]["before"]["priority"] == 0 and by_action["channel.update"]["after"]["priority"] == 3
    assert by_action["key.disable"]["before"]["enabled"] is True and by_action["key.disable"]["after"]["enabled"] is False
    assert by_action["key.limits"]["after"]["budgets"]["weekly"] == 3_000_000
    assert by_action["code.create"]["after"]["ids"] == [code["id"]] and code["code"] not in json.dumps(rows)
    assert "sk-upstream-secret" not in json.dumps(rows)  # upstream keys masked
    assert by_action["channel.delete"]["after"] is None and by_action["channel.delete"]["before"]["name"] == "up"
    status, out, _ = run(capsys, seed, "token", "create", "carol", "--json")
    assert status == 0 and audit_rows(seed)[-1]["action"] == "token.create"


def test_a_topup_with_an_idempotency_key_credits_once(seed, capsys):
    user_id = seed.user("dave")
    first = run(capsys, seed, "wallet", "topup", "dave", "10", "--idempotency-key", "pay-42", "--json")
    again = run(capsys, seed, "wallet", "topup", "dave", "10", "--idempotency-key", "pay-42", "--json")
    assert first[0] == again[0] == 0
    done, replay = json.loads(first[1]), json.loads(again[1])
    assert (done["replayed"], replay["replayed"]) == (False, True) and replay["ledger_id"] == done["ledger_id"]
    assert kit.balance_of(seed, user_id) == 10_000_000
    status, out, _ = run(capsys, seed, "wallet", "topup", "dave", "10", "--idempotency-key", "pay-42")
    assert status == 0 and "Already credited under idempotency key 'pay-42'" in out and "nothing moved" in out
    status, out, err = run(capsys, seed, "wallet", "topup", "dave", "11", "--idempotency-key", "pay-42")
    assert (status, out) == (1, "") and len(err.strip().splitlines()) == 1 and "pay-42" in err
    assert kit.balance_of(seed, user_id) == 10_000_000
    assert [row["action"] for row in audit_rows(seed)] == ["wallet.topup"]  # the replays moved nothing and wrote nothing
    assert run(capsys, seed, "wallet", "topup", "dave", "1")[0] == 0  # without a key: every call credits
    assert kit.balance_of(seed, user_id) == 11_000_000
