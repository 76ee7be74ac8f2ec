"""The whole life of users and keys from the CLI and the management API: edit,
password, enable, disable, delete (money history kept), a key edited by an
operator (its group too), and the admin layer's rules refusing the same bad
input with the same words from both fronts."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import time

import pytest
import requests

from gateway_core.admin.rules import MAX_AMOUNT_MICROS
from gateway_core.commands.cli import main
from gateway_core.money import format_usd
from gateway_core.secrets import verify_password

pytestmark = pytest.mark.usefixtures("bundled_adapters")  # the CLI adds demo channels


def cli(db: str, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        if stdin is not None:
            stack.enter_context(pytest.MonkeyPatch.context()).setattr("sys.stdin", io.StringIO(stdin))
        status = main(["--db", db, *argv])
    return status, out.getvalue(), err.getvalue()


def ok(db: str, *argv: str, stdin: str | None = None) -> dict:
    status, out, err = cli(db, *argv, "--json", stdin=stdin)
    assert status == 0, err
    return json.loads(out) if out.strip() else {}


def refused(db: str, *argv: str) -> str:
    status, out, err = cli(db, *argv)
    assert status != 0 and out == "" and err.count("\n") == 1, (status, out, err)
    return err.strip()


@pytest.fixture
def site(seed, start_gateway):
    db = seed.config.db_path
    ok(db, "user", "add", "root", "--admin")
    alice = ok(db, "user", "add", "alice", "--groups", "default,vip")["id"]
    seed.topup(alice, 3_000_000)
    ok(db, "channel", "add", "demo", "--type", "demo", "--base-url", "local://demo", "--models", "demo-chat,demo-fast", "--groups", "default,vip")
    ok(db, "price", "set", "demo-chat", "--free")
    gateway = start_gateway()
    token = ok(db, "token", "create", "root", "--scope", "admin", "--expires", "2099-01-01")["token"]
    admin = requests.Session()
    admin.headers["authorization"] = f"Bearer {token}"
    return db, gateway.url, admin, alice


def seed_rows(db: str, sql: str) -> list[dict]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute(sql)]


def chat(url: str, secret: str) -> requests.Response:
    body = {"model": "demo-chat", "messages": [{"role": "user", "content": "hi"}]}
    return requests.post(url + "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {secret}"}, timeout=30)


def test_user_edit_password_enable_disable_from_the_cli(site):
    db, url, admin, alice = site
    user = ok(db, "user", "edit", "alice", "--groups", "vip")
    assert user["groups"] == ["vip"] and not user["is_admin"]
    assert ok(db, "user", "edit", "alice", "--open", "default", "--admin")["groups"] == ["vip", "default"]
    assert ok(db, "user", "edit", "alice", "--no-admin")["is_admin"] is False
    assert "say what to change" in refused(db, "user", "edit", "alice")
    assert "without --open" in refused(db, "user", "edit", "alice", "--groups", "a", "--open", "b")

    ok(db, "user", "password", "alice", "--password-stdin", stdin="a-new-password\n")
    status, _, err = cli(db, "user", "password", "alice", "--password-stdin", stdin="short\n")
    assert status == 2 and "needs 8 characters or more" in err
    [stored] = seed_rows(db, "SELECT password_hash FROM users WHERE name = 'alice'")
    assert verify_password("a-new-password", stored["password_hash"])

    assert ok(db, "user", "disable", "alice")["enabled"] is False
    assert admin.get(f"{url}/api/v1/users/{alice}", timeout=10).json()["enabled"] is False
    assert ok(db, "user", "enable", "alice")["enabled"] is True
    assert refused(db, "user", "disable", "bob") == "relaygate user disable: no user named 'bob'"


def test_a_deleted_user_stops_at_once_and_keeps_its_money_history(site):
    db, url, admin, alice = site
    key = ok(db, "key", "create", "alice")
    assert chat(url, key["key"]).status_code == 200
    assert "cannot be undone" in refused(db, "user", "delete", "alice")
    status, out, err = cli(db, "user", "delete", "alice", "--yes")
    assert status == 0 and "balance of 3.00 USD stays on their ledger" in out, err
    assert refused_soon(url, key["key"])  # the CLI's change reaches the running gateway within its key cache's second
    listed = ok(db, "user", "list")
    assert "alice" not in [user["name"] for user in listed]
    [gone] = [user for user in ok(db, "user", "list", "--deleted") if user["name"] == "alice"]
    assert gone["deleted"] is True and gone["balance_micros"] == 3_000_000  # nothing moved: the ledger still sums to it
    assert ok(db, "check")["ok"] is True
    assert ok(db, "wallet", "show", "alice")["ledger"]  # the money history is still there
    assert refused(db, "user", "add", "alice") == "relaygate user add: user 'alice' already exists"
    for argv in (("user", "enable", "alice"), ("key", "create", "alice")):
        assert "user 'alice' is deleted" in refused(db, *argv)
    status, _, err = cli(db, "user", "password", "alice", "--password-stdin", stdin="long-enough-1\n")
    assert status == 2 and "user 'alice' is deleted" in err
    assert "already deleted" in refused(db, "user", "delete", "alice", "--yes")
    [stored] = seed_rows(db, "SELECT password_hash, enabled, deleted_at FROM users WHERE name = 'alice'")
    assert stored["password_hash"] is None and stored["enabled"] == 0 and stored["deleted_at"] > 0  # no sign-in either
    assert {row["deleted"] for row in seed_rows(db, "SELECT deleted FROM api_keys")} == {1}


def test_the_api_deletes_a_user_but_never_its_operator(site):
    db, url, admin, alice = site
    root = admin.get(url + "/api/v1/me", timeout=10).json()["user"]["id"]
    refusal = admin.delete(f"{url}/api/v1/users/{root}", timeout=10)
    assert refusal.status_code == 400 and refusal.json()["error"]["message"] == "You cannot delete yourself."
    answer = admin.delete(f"{url}/api/v1/users/{alice}", timeout=10)
    assert answer.status_code == 200 and answer.json()["deleted"] is True and answer.json()["balance_micros"] == 3_000_000
    assert admin.delete(f"{url}/api/v1/users/{alice}", timeout=10).status_code == 400
    assert [row["action"] for row in admin.get(url + "/api/v1/audit", timeout=10).json()["items"]][0] == "user.delete"


def test_an_operator_edits_any_key_from_the_cli_and_the_api(site):
    db, url, admin, alice = site
    key = ok(db, "key", "create", "alice", "--name", "ci")
    edited = ok(
        db, "key", "edit", str(key["id"]), "--name", "laptop", "--group", "vip", "--quota", "1.5", "--expires", "2099-01-01",
        "--models", "demo-chat", "--allow-ip", "127.0.0.1", "--rpm", "60",
    )  # fmt: skip
    assert (edited["name"], edited["group"], edited["quota_micros"], edited["models"]) == ("laptop", "vip", 1_500_000, ["demo-chat"])
    assert edited["allow_ips"] == ["127.0.0.1/32"] and edited["expires_at"] == 4070908800.0
    cleared = ok(db, "key", "edit", str(key["id"]), "--quota", "none", "--expires", "never", "--models", "all", "--allow-ip", "any")
    assert (cleared["quota_micros"], cleared["expires_at"], cleared["models"], cleared["allow_ips"]) == (None, None, [], [])
    assert "not open to user 'alice'" in refused(db, "key", "edit", str(key["id"]), "--group", "gold")
    assert chat(url, key["key"]).status_code == 200

    path = f"{url}/api/v1/users/{alice}/keys/{key['id']}"
    answer = admin.patch(path, json={"group": "default", "quota": "2"}, timeout=10)
    assert answer.status_code == 200 and (answer.json()["group"], answer.json()["quota_micros"]) == ("default", 2_000_000)
    assert admin.post(path + "/disable", timeout=10).json()["enabled"] is False
    assert refused_soon(url, key["key"])
    assert admin.patch(f"{url}/api/v1/users/{alice + 99}/keys/{key['id']}", json={"name": "x"}, timeout=10).status_code == 404
    assert admin.delete(path, timeout=10).status_code == 204


def refused_soon(url: str, secret: str) -> bool:
    """Whether the key is refused (401) within two seconds."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        if chat(url, secret).status_code == 401:
            return True
        time.sleep(0.1)
    return False


BAD_INPUT = [
    # (CLI argv, API call, the admin layer's words)
    (("user", "add", "alice smith"), ("POST", "/users", {"name": "alice smith"}), "must not contain spaces or control characters, got 'alice smith'"),
    (("channel", "add", "x", "--type", "demo", "--base-url", "ftp://files.example.com", "--models", "m"),
     ("POST", "/channels", {"name": "x", "type": "demo", "base_url": "ftp://files.example.com", "models": ["m"]}),
     "must start with http:// or https:// or local://, got 'ftp://files.example.com'"),
    (("key", "create", "alice", "--models", "demo-chta"), ("POST", "/users/{alice}/keys", {"models": ["demo-chta"]}),
     "names model(s) no channel serves to the group 'default': demo-chta"),
    (("wallet", "topup", "alice", "2000000000"), ("POST", "/users/{alice}/topups", {"amount": "2000000000"}),
     f"must be at most {format_usd(MAX_AMOUNT_MICROS)} USD, got 2000000000.00 USD"),
    (("key", "create", "alice", "--quota", "5000000000"), ("POST", "/users/{alice}/keys", {"quota": "5000000000"}),
     f"must be at most {format_usd(MAX_AMOUNT_MICROS)} USD, got 5000000000.00 USD"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "call", "words"), BAD_INPUT)
def test_the_cli_and_the_api_refuse_the_same_input_in_the_same_words(site, argv, call, words):
    db, url, admin, alice = site
    said = refused(db, *argv)
    assert words in said, said
    method, path, body = call
    answer = admin.request(method, url + "/api/v1" + path.format(alice=alice), json=body, timeout=10)
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["error"]["message"], answer.text
