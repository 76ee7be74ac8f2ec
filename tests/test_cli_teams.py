"""``relaygate team …`` and ``relaygate logs --team`` on both stores: the admin layer's
rules and messages on the command line (docs/teams.md)."""

from __future__ import annotations

import json

import pytest

from tests.test_cli_limits import command_line


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys, db_url):
    return command_line(tmp_path, monkeypatch, capsys, db_url)


def ok(cli, *argv):
    status, out, err = cli(*argv)
    assert status == 0, err
    return out


def test_teams_from_the_command_line(cli):
    ok(cli, "user", "add", "dev")
    ok(cli, "user", "add", "lead")
    assert "Created team 'eng'" in ok(cli, "team", "add", "eng", "--groups", "default,vip")
    assert "'dev' is a member of team 'eng'" in ok(cli, "team", "member", "add", "eng", "dev")
    assert "'lead' is an admin of team 'eng'" in ok(cli, "team", "member", "add", "eng", "lead", "--role", "admin")
    assert "'dev' is a viewer" in ok(cli, "team", "member", "role", "eng", "dev", "viewer")
    out = ok(cli, "team", "key", "add", "eng", "--name", "ci", "--group", "vip")
    assert "Created service key" in out and "sk-" in out
    assert "Credited 25.00 USD to team 'eng'" in ok(cli, "team", "topup", "eng", "25")
    ok(cli, "team", "edit", "eng", "--rpm", "60", "--daily-usd", "5")
    shown = json.loads(ok(cli, "team", "show", "eng", "--json"))
    assert shown["balance_micros"] == 25_000_000 and shown["groups"] == ["default", "vip"]
    assert shown["limits"]["rpm"] == 60 and shown["limits"]["daily_budget_micros"] == 5_000_000
    assert [(m["user"], m["role"]) for m in shown["members"]] == [("dev", "viewer"), ("lead", "admin")]
    assert shown["usage"]["requests"] == 0 and shown["usage_by_member"] == []  # who spent what (tests/test_teams.py counts it)
    cleared = json.loads(ok(cli, "team", "edit", "eng", "--rpm", "", "--json"))["limits"]  # '' clears a rate limit, as in the console
    assert cleared["rpm"] is None and cleared["daily_budget_micros"] == 5_000_000
    listed = json.loads(ok(cli, "team", "list", "--json"))
    assert [(t["name"], t["members"]) for t in listed] == [("eng", 2)]
    keys = json.loads(ok(cli, "team", "key", "list", "eng", "--json"))
    assert [(k["name"], k["group"], k["member_id"]) for k in keys] == [("ci", "vip", None)]
    assert json.loads(ok(cli, "logs", "--team", "eng", "--json")) == []
    assert "no longer in team 'eng'" in ok(cli, "team", "member", "remove", "eng", "dev")
    assert "team:eng" not in ok(cli, "user", "list")
    assert json.loads(ok(cli, "check", "--json"))["ok"]
    assert "Deleted team 'eng'" in ok(cli, "team", "delete", "eng")


def test_bad_input_is_one_line_with_the_admin_layers_message(cli):
    ok(cli, "team", "add", "eng")
    for argv, message in (
        (("team", "add", "eng"), "team 'eng' already exists"),
        (("team", "add", "two words"), "team must not contain spaces"),
        (("team", "show", "nope"), "no team named 'nope'"),
        (("team", "member", "add", "eng", "nobody"), "no user named 'nobody'"),
        (("team", "key", "add", "eng", "--group", "gold"), "'gold' is not one of the groups of team 'eng'"),
        (("team", "topup", "eng", "-3"), "amount"),
        (("logs", "--team", "nope"), "no team named 'nope'"),
    ):
        status, _, err = cli(*argv)
        assert status != 0 and message in err and "Traceback" not in err, (argv, err)
    ok(cli, "user", "add", "dev")
    status, _, err = cli("team", "member", "add", "eng", "dev", "--role", "owner")
    assert status == 2 and "role must be one of admin, member, viewer" in err


def test_a_team_key_is_edited_from_the_command_line(cli):
    ok(cli, "team", "add", "eng")
    key_id = json.loads(ok(cli, "team", "key", "add", "eng", "--name", "ci", "--json"))["id"]
    out = ok(cli, "team", "key", "edit", "eng", str(key_id), "--name", "deploy", "--allow-ips", "10.0.0.0/8, 192.0.2.7")
    assert f"Key {key_id} ('deploy') of team 'eng': models any; networks 10.0.0.0/8, 192.0.2.7/32." in out
    edited = json.loads(ok(cli, "team", "key", "edit", "eng", str(key_id), "--allow-ips", "", "--json"))
    assert (edited["name"], edited["allow_ips"], edited["models"]) == ("deploy", [], [])
    ok(cli, "team", "add", "ops")
    for argv, message in (
        (("team", "key", "edit", "eng", str(key_id)), "say what to change: --name, --models or --allow-ips"),
        (("team", "key", "edit", "ops", str(key_id), "--name", "x"), f"no API key with id {key_id} in team 'ops'"),
        (("team", "key", "edit", "eng", str(key_id), "--allow-ips", "nowhere"), "not an IP address or CIDR network: 'nowhere'"),
        (("team", "key", "edit", "eng", str(key_id), "--name", " "), "name must not be empty"),
        (("team", "edit", "eng", "--rpm", "-1"), "--rpm must be a whole number from 0 (unlimited) to 2147483648, got -1"),  # the admin layer's words
    ):
        status, _, err = cli(*argv)
        assert status != 0 and message in err and "Traceback" not in err, (argv, err)


def test_sign_ups_are_approved_and_rejected_from_the_command_line(cli):
    from gateway_core.admin import Admin, audit, signups
    from gateway_core.config import Config
    from gateway_core.testing import Seed

    ok(cli, "team", "add", "newcomers")

    async def ask(port):
        for name in ("zoe@example.com", "yan@example.com"):
            await signups.request_signup(Admin(port), name, team="newcomers", role="viewer", group="trial")

    with Seed(Config(db_path=cli.db)) as seed:
        seed._admin(ask)
    assert "(none)" not in ok(cli, "user", "pending")
    pending = json.loads(ok(cli, "user", "pending", "--json"))
    assert [(s["name"], s["team"], s["role"], s["group"], s["status"]) for s in pending] == [
        ("zoe@example.com", "newcomers", "viewer", "trial", "pending"), ("yan@example.com", "newcomers", "viewer", "trial", "pending")]
    out = ok(cli, "user", "approve", "zoe@example.com")
    assert "Approved the sign-up of 'zoe@example.com': the user is made (group 'trial', viewer of team 'newcomers')" in out
    assert json.loads(ok(cli, "user", "reject", "yan@example.com", "--json"))["status"] == "rejected"
    assert json.loads(ok(cli, "user", "pending", "--json")) == []
    assert [s["status"] for s in json.loads(ok(cli, "user", "pending", "--all", "--json"))] == ["approved", "rejected"]
    shown = json.loads(ok(cli, "team", "show", "newcomers", "--json"))
    assert [(m["user"], m["role"]) for m in shown["members"]] == [("zoe@example.com", "viewer")]
    users = {u["name"]: u for u in json.loads(ok(cli, "user", "list", "--json"))}
    assert "zoe@example.com" in users and "yan@example.com" not in users
    for argv, message in (
        (("user", "approve", "yan@example.com"), "the sign-up of 'yan@example.com' is rejected already"),
        (("user", "reject", "zoe@example.com"), "the sign-up of 'zoe@example.com' is approved already"),
        (("user", "approve", "nobody"), "no sign-up of 'nobody'"),
    ):
        status, _, err = cli(*argv)
        assert status == 1 and message in err and "Traceback" not in err, (argv, err)

    async def actions(port):
        return [(entry.via, entry.action) for entry in await audit.list_entries(Admin(port))]

    with Seed(Config(db_path=cli.db)) as seed:
        done = seed._admin(actions)
    assert {("cli", "signup.approve"), ("cli", "signup.reject"), ("cli", "user.create")} <= set(done)
