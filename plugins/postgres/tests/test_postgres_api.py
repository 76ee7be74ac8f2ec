"""The management API on PostgreSQL through real HTTP: tokens, the audit log,
roles, the request-id filter, and a top-up sent many times at once with one
idempotency key crediting once."""

from __future__ import annotations

import contextlib
import io
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from gateway_core.commands.cli import main
from relaygate_postgres.store import PostgresStore


def cli(db: str, *argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--db", db, *argv]) == 0
    return out.getvalue()


def session(token: str) -> requests.Session:
    http = requests.Session()
    http.headers["authorization"] = f"Bearer {token}"
    return http


@pytest.fixture
def api(pg_url, start_gateway):
    cli(pg_url, "user", "add", "root", "--admin")
    cli(pg_url, "user", "add", "alice")
    cli(pg_url, "channel", "add", "demo", "--type", "demo", "--base-url", "local://demo", "--models", "demo-1")
    cli(pg_url, "price", "set", "demo-1", "--free")
    root = json.loads(cli(pg_url, "token", "create", "root", "--scope", "admin", "--json"))["token"]
    alice = json.loads(cli(pg_url, "token", "create", "alice", "--scope", "write", "--json"))["token"]
    gateway = start_gateway(store=PostgresStore(pg_url, max_size=8))
    return gateway.url, session(root), session(alice)


def test_one_idempotency_key_credits_once_under_concurrency_on_postgresql(api, pg_url):
    url, root, alice = api
    alice_id = alice.get(url + "/api/v1/me", timeout=10).json()["user"]["id"]
    topups = f"{url}/api/v1/users/{alice_id}/topups"

    def send(_: int) -> requests.Response:
        return root.post(topups, json={"amount": "7.25", "note": "invoice 9"}, headers={"Idempotency-Key": "invoice-9"}, timeout=30)

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(send, range(24)))
    assert [answer.status_code for answer in answers] == [201] * 24, [answer.text for answer in answers if answer.status_code != 201]
    assert len({answer.json()["ledger_id"] for answer in answers}) == 1
    assert sum(not answer.json()["replayed"] for answer in answers) == 1
    assert alice.get(url + "/api/v1/wallet", timeout=10).json()["balance_micros"] == 7_250_000
    conflict = root.post(topups, json={"amount": "1"}, headers={"Idempotency-Key": "invoice-9"}, timeout=10)
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "conflict"
    other = root.post(topups, json={"amount_micros": 1}, headers={"Idempotency-Key": "invoice-10"}, timeout=10).json()
    assert other["balance_after_micros"] == 7_250_001 and other["replayed"] is False
    plain = root.post(topups, json={"amount": "1"}, timeout=10).json()  # no key: a credit each time
    assert plain["balance_after"] == "8.250001"
    assert "OK" in cli(pg_url, "check")
    audited = root.get(url + "/api/v1/audit", params={"target": f"user {alice_id}"}, timeout=10).json()["items"]
    assert [entry["action"] for entry in audited] == ["wallet.topup"] * 3 + ["user.create"]  # newest first; made with the CLI
    assert audited[-1]["via"] == "cli"


def test_tokens_roles_audit_and_the_request_filter_on_postgresql(api, pg_url):
    url, root, alice = api
    made = alice.post(url + "/api/v1/keys", json={"name": "pg", "quota": "1.5"}, timeout=10)
    assert made.status_code == 201, made.text
    key, secret = made.json()["key"], made.json()["secret"]
    answer = requests.post(url + "/v1/chat/completions", headers={"authorization": f"Bearer {secret}"},
                           json={"model": "demo-1", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    found = alice.get(url + "/api/v1/usage", params={"request_id": answer.headers["x-request-id"]}, timeout=10).json()
    assert [row["key_id"] for row in found["items"]] == [key["id"]]
    renamed = alice.patch(f"{url}/api/v1/keys/{key['id']}", json={"name": "pg-2"}, timeout=10).json()
    assert renamed["name"] == "pg-2" and renamed["quota_micros"] == 1_500_000
    entry = root.get(url + "/api/v1/audit", params={"target": f"key {key['id']}"}, timeout=10).json()["items"][0]
    assert (entry["action"], entry["before"]["name"], entry["after"]["name"]) == ("key.update", "pg", "pg-2")

    alice_id = renamed["user_id"]
    promoted = root.patch(f"{url}/api/v1/users/{alice_id}", json={"is_admin": True, "groups": ["default", "vip"]}, timeout=10).json()
    assert promoted["is_admin"] is True and promoted["groups"] == ["default", "vip"]
    token = alice.post(url + "/api/v1/tokens", json={"scope": "read", "name": "short"}, timeout=10).json()
    reader = session(token["token"])
    assert reader.get(url + "/api/v1/me", timeout=10).json()["scope"] == "read"
    assert reader.post(url + "/api/v1/keys", json={}, timeout=10).status_code == 403
    assert alice.delete(f"{url}/api/v1/tokens/{token['id']}", timeout=10).status_code == 200
    assert reader.get(url + "/api/v1/me", timeout=10).status_code == 401
    listed = json.loads(cli(pg_url, "token", "list", "alice", "--json"))
    assert [item["revoked_at"] is not None for item in listed] == [False, True]
