"""The management API through real HTTP (a gateway on loopback, the SQLite
store): every operation for its owner, for another user (404), with a
read-only token on a write (403), with a revoked, expired or disabled user's
token (401), and a relay API key (401 saying so)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from gateway_core.commands.cli import main
from gateway_core.secrets import hash_password


def cli(db: str, *argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--db", db, *argv]) == 0
    return out.getvalue()


def new_token(db: str, user: str, scope: str = "write", *extra: str) -> str:
    created = json.loads(cli(db, "token", "create", user, "--scope", scope, "--json", *extra))
    assert created["token"].startswith("rgt-") and isinstance(created["id"], int)
    return str(created["token"])


class Api:
    def __init__(self, url: str, token: str | None) -> None:
        self.url = url + "/api/v1"
        self.http = requests.Session()
        if token:
            self.http.headers["authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.http.request(method, self.url + path, timeout=30, **kwargs)

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, body: dict | None = None, **kwargs) -> requests.Response:
        return self.call("POST", path, json=body, **kwargs)

    def patch(self, path: str, body: dict, **kwargs) -> requests.Response:
        return self.call("PATCH", path, json=body, **kwargs)

    def put(self, path: str, body: dict, **kwargs) -> requests.Response:
        return self.call("PUT", path, json=body, **kwargs)

    def delete(self, path: str, **kwargs) -> requests.Response:
        return self.call("DELETE", path, **kwargs)


def error_of(response: requests.Response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["request_id"] == response.headers["x-request-id"]
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    return error


@pytest.fixture
def site(seed, start_gateway):
    db = seed.config.db_path
    ids = {"root": seed.user("root", admin=True), "alice": seed.user("alice", balance_usd=5), "bob": seed.user("bob")}
    seed.channel("demo", type="demo", base_url="local://demo", models=["demo-1"])
    gateway = start_gateway()
    tokens = {
        "root": new_token(db, "root", "admin"), "alice": new_token(db, "alice", "write"),
        "alice_read": new_token(db, "alice", "read"), "bob": new_token(db, "bob", "write"),
        "root_write": new_token(db, "root", "write"),
    }  # fmt: skip
    apis = {name: Api(gateway.url, token) for name, token in tokens.items()}
    return gateway, db, ids, apis, tokens


# --- authentication ---------------------------------------------------------------------


def test_a_relay_api_key_is_refused_with_a_message_saying_it_is_one(site, seed):
    gateway, db, ids, apis, _ = site
    _, secret = seed.key(ids["alice"])
    for headers in ({"authorization": f"Bearer {secret}"}, {"x-api-key": secret}):
        error = error_of(requests.get(gateway.url + "/api/v1/keys", headers=headers, timeout=10), 401, "relay_key")
        assert "relay API key" in error["message"] and "relaygate token create" in error["message"]
    assert secret not in requests.get(gateway.url + "/api/v1/keys", headers={"authorization": f"Bearer {secret}"}, timeout=10).text


def test_no_token_a_wrong_one_a_revoked_one_an_expired_one_and_a_disabled_users_are_401(site):
    gateway, db, ids, apis, tokens = site
    assert error_of(Api(gateway.url, None).get("/me"), 401, "unauthenticated")
    assert error_of(Api(gateway.url, "rgt-not-a-token").get("/me"), 401, "invalid_token")
    assert error_of(requests.get(gateway.url + "/api/v1/me", headers={"authorization": "Basic abc"}, timeout=10), 401)
    assert apis["bob"].get("/me").status_code == 200
    listed = json.loads(cli(db, "token", "list", "bob", "--json"))
    cli(db, "token", "revoke", str(listed[0]["id"]))
    assert error_of(apis["bob"].get("/me"), 401, "invalid_token")

    expiring = new_token(db, "alice", "write", "--expires", "2099-01-01T00:00:00Z")
    assert Api(gateway.url, expiring).get("/me").status_code == 200
    with sqlite3.connect(db) as conn:  # time passes: the token's expiry is now behind
        conn.execute("UPDATE access_tokens SET expires_at = ? WHERE expires_at = 4070908800", (time.time() - 1,))
    assert error_of(Api(gateway.url, expiring).get("/me"), 401, "invalid_token")

    assert apis["root"].post(f"/users/{ids['alice']}/disable").status_code == 200
    assert error_of(apis["alice"].get("/me"), 401, "invalid_token")


def test_me_says_who_and_what_scope(site):
    _, _, ids, apis, _ = site
    me = apis["alice_read"].get("/me").json()
    assert me["user"]["id"] == ids["alice"] and me["scope"] == "read" and me["via"] == "token"
    assert me["user"]["balance"] == "5.00" and me["user"]["balance_micros"] == 5_000_000


def test_scopes_read_cannot_write_and_only_admin_tokens_of_admins_run_admin_operations(site):
    _, _, ids, apis, _ = site
    assert error_of(apis["alice_read"].post("/keys", {"name": "x"}), 403, "insufficient_scope")
    assert error_of(apis["alice_read"].post("/tokens", {"scope": "read"}), 403, "insufficient_scope")
    assert error_of(apis["alice"].post("/tokens", {"scope": "admin"}), 403)
    assert error_of(apis["alice"].get("/users"), 403)
    assert error_of(apis["root_write"].get("/users"), 403, "insufficient_scope")  # an admin user, a write token
    assert apis["root"].get("/users").status_code == 200


# --- tokens ------------------------------------------------------------------------------


def test_tokens_are_listed_created_once_and_revoked_by_their_owner_or_an_admin(site):
    gateway, _, ids, apis, _ = site
    created = apis["alice"].post("/tokens", {"name": "ci", "scope": "read", "expires_at": "2099-12-31"})
    assert created.status_code == 201
    token = created.json()
    assert token["token"].startswith("rgt-") and token["record"]["scope"] == "read"
    listed = apis["alice"].get("/tokens").json()
    assert token["id"] in [item["id"] for item in listed]
    assert token["token"] not in json.dumps(listed)
    assert all(item["user_name"] == "alice" for item in listed)
    assert [item["last_used_at"] is not None for item in listed] == [True, False, False]  # the write token in use; the read one, the new one
    assert Api(gateway.url, token["token"]).get("/me").json()["scope"] == "read"
    error_of(apis["bob"].delete(f"/tokens/{token['id']}"), 404)
    assert apis["alice"].delete(f"/tokens/{token['id']}").json()["revoked_at"] is not None
    error_of(Api(gateway.url, token["token"]).get("/me"), 401)
    error_of(apis["alice"].post("/tokens", {"expires_at": "2001-01-01"}), 400)

    other = apis["alice"].post("/tokens", {"name": "leaked", "scope": "read"}).json()
    root = apis["root"]
    assert "leaked" in [item["name"] for item in root.get(f"/users/{listed[0]['user_id']}/tokens").json()]
    error_of(root.delete(f"/users/{ids['bob']}/tokens/{other['id']}"), 404)  # not bob's
    assert root.delete(f"/users/{listed[0]['user_id']}/tokens/{other['id']}").json()["revoked_at"] is not None
    error_of(Api(gateway.url, other["token"]).get("/me"), 401)


# --- keys ----------------------------------------------------------------------------------


def test_keys_create_list_get_update_switch_and_delete_for_the_owner(site):
    gateway, _, _, apis, _ = site
    alice = apis["alice"]
    created = alice.post("/keys", {"name": "ci", "quota": "2.50", "models": ["demo-1"], "allow_ips": ["127.0.0.1/32"], "rpm": 100})
    assert created.status_code == 201, created.text
    key, secret = created.json()["key"], created.json()["secret"]
    assert secret.startswith("sk-") and key["quota"] == "2.50" and key["quota_micros"] == 2_500_000
    assert key["used"] == "0.00" and key["used_micros"] == 0 and key["limits"]["requests_per_minute"] == 100
    assert secret not in alice.get("/keys").text and secret not in alice.get(f"/keys/{key['id']}").text
    assert [item["id"] for item in alice.get("/keys").json()] == [key["id"]]

    assert _chat(gateway, secret, "hi").status_code == 200

    changed = alice.patch(f"/keys/{key['id']}", {"name": "ci-2", "quota_micros": 1_000_000, "expires_at": "2099-01-01T00:00:00Z"})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["name"], changed.json()["quota"], changed.json()["models"]) == ("ci-2", "1.00", ["demo-1"])
    assert changed.json()["expires_at"] == 4070908800.0
    limited = alice.patch(f"/keys/{key['id']}", {"rpm": 1, "concurrency": 2}).json()
    assert (limited["limits"]["requests_per_minute"], limited["limits"]["concurrency"], limited["name"]) == (1, 2, "ci-2")
    assert _chat(gateway, secret, "one").status_code == 200
    assert _chat(gateway, secret, "two").status_code == 429  # the key's own limit, changed through the API
    assert alice.patch(f"/keys/{key['id']}", {"rpm": 0}).json()["limits"]["requests_per_minute"] == 0
    assert alice.post(f"/keys/{key['id']}/disable").json()["enabled"] is False
    assert _chat(gateway, secret, "hi").status_code == 401
    assert alice.post(f"/keys/{key['id']}/enable").json()["enabled"] is True
    assert alice.delete(f"/keys/{key['id']}").status_code == 204
    error_of(alice.get(f"/keys/{key['id']}"), 404)
    assert alice.get("/keys").json() == []


def test_another_users_key_is_404_for_every_operation(site, seed):
    _, _, ids, apis, _ = site
    key_id, _ = seed.key(ids["alice"], name="alices")
    bob = apis["bob"]
    for response in (
        bob.get(f"/keys/{key_id}"), bob.patch(f"/keys/{key_id}", {"name": "mine"}), bob.post(f"/keys/{key_id}/enable"),
        bob.post(f"/keys/{key_id}/disable"), bob.delete(f"/keys/{key_id}"), bob.get("/keys/99999"), bob.get("/keys/abc"),
    ):  # fmt: skip
        assert "alices" not in response.text
        error_of(response, 404, "not_found")
    assert apis["alice"].get(f"/keys/{key_id}").json()["name"] == "alices"


def test_invalid_input_is_400_naming_the_field(site):
    _, _, _, apis, _ = site
    alice = apis["alice"]
    assert error_of(alice.post("/keys", {"quota": "abc"}), 400)["field"] == "quota"
    assert error_of(alice.post("/keys", {"quota": "1.0000001"}), 400)["field"] == "quota"
    assert error_of(alice.post("/keys", {"color": "red"}), 400)["field"] == "color"
    assert error_of(alice.post("/keys", {"name": 7}), 400)["field"] == "name"
    assert error_of(alice.post("/keys", {"expires_at": "tomorrow"}), 400)["field"] == "expires_at"
    assert error_of(alice.post("/keys", {"allow_ips": ["not-a-network"]}), 400)
    assert error_of(alice.post("/keys", {"group": "vip"}), 400)
    bad_json = alice.call("POST", "/keys", data=b"{", headers={"content-type": "application/json"})
    assert error_of(bad_json, 400)["field"] == "body"
    assert error_of(alice.get("/usage", params={"limit": "x"}), 400)["field"] == "limit"
    assert error_of(alice.get("/usage", params={"colour": "1"}), 400)["field"] == "colour"
    assert error_of(alice.get("/usage", params={"cursor": "nope"}), 400)["field"] == "cursor"
    assert error_of(alice.call("PUT", "/keys"), 405, "method_not_allowed")
    assert error_of(alice.get("/no-such-thing"), 404)
    assert error_of(alice.call("POST", "/keys", data=b"x" * (2 << 20)), 413, "too_large")


# --- usage and wallet --------------------------------------------------------------------------


def _chat(gateway, secret: str, text: str, model: str = "demo-1") -> requests.Response:
    return requests.post(gateway.url + "/v1/chat/completions", headers={"authorization": f"Bearer {secret}"},
                         json={"model": model, "messages": [{"role": "user", "content": text}]}, timeout=30)  # fmt: skip


def test_the_usage_log_filters_pages_exports_csv_and_sums_per_day_and_model(site, seed):
    gateway, _, ids, apis, _ = site
    seed.price("demo-1", 1_000_000, 2_000_000)
    key_a, secret_a = seed.key(ids["alice"], name="a")
    key_b, secret_b = seed.key(ids["alice"], name="b")
    _, secret_bob = seed.key(ids["bob"], name="bobs")
    assert apis["root"].post(f"/users/{ids['bob']}/topups", {"amount": "1"}).status_code == 201
    request_ids = [_chat(gateway, secret_a, f"hello {n}").headers["x-request-id"] for n in range(3)]
    assert _chat(gateway, secret_b, "other key").status_code == 200
    assert _chat(gateway, secret_a, "no such model", model="nope").status_code == 400
    assert _chat(gateway, secret_bob, "bob's").status_code == 200
    alice = apis["alice"]

    every = alice.get("/usage").json()
    assert len(every["items"]) == 5 and every["next_cursor"] is None
    assert {row["user_id"] for row in every["items"]} == {ids["alice"]}
    assert all(re.fullmatch(r"\d+\.\d{2,6}", row["cost"]) for row in every["items"])
    first = alice.get("/usage", params={"limit": 2}).json()
    second = alice.get("/usage", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    third = alice.get("/usage", params={"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [row["id"] for row in first["items"] + second["items"] + third["items"]] == [row["id"] for row in every["items"]]
    assert third["next_cursor"] is None
    assert {row["key_id"] for row in alice.get("/usage", params={"key_id": key_b}).json()["items"]} == {key_b}
    refused = alice.get("/usage", params={"errors": "true"}).json()["items"]
    assert [row["status"] for row in refused] == [400]
    # the owner sees a failure in the gateway's words; which channel served a row and what the upstream said are the operator's
    assert "refused with status 400" in refused[0]["error_summary"]
    assert all(not {"channel_name", "channel_id", "upstream_error", "error_message", "attempts"} & row.keys() for row in every["items"])
    assert {row["channel_name"] for row in apis["root"].get("/logs", params={"user_id": ids["alice"], "status": 200}).json()["items"]} == {"demo"}
    assert len(alice.get("/usage", params={"status": 200, "model": "demo-1"}).json()["items"]) == 4
    assert alice.get("/usage", params={"since": time.time() + 60}).json()["items"] == []
    one = alice.get("/usage", params={"request_id": request_ids[1]}).json()["items"]
    assert [row["request_id"] for row in one] == [request_ids[1]]
    bobs_request = apis["bob"].get("/usage").json()["items"][0]["request_id"]
    assert alice.get("/usage", params={"request_id": bobs_request}).json()["items"] == []

    csv_answer = alice.get("/usage.csv", params={"key_id": key_a})
    assert csv_answer.status_code == 200 and csv_answer.headers["content-type"].startswith("text/csv")
    lines = csv_answer.text.strip().splitlines()
    assert lines[0].startswith("id,request_id,created_at") and len(lines) == 5  # the header and key a's four rows
    assert "channel_name" not in lines[0] and "served_model" in lines[0]
    assert len(alice.get("/usage.csv").text.strip().splitlines()) == 6
    assert len(alice.get("/usage.csv", params={"limit": 2}).text.strip().splitlines()) == 3
    assert len(alice.get("/usage.csv", params={"cursor": first["next_cursor"]}).text.strip().splitlines()) == 4

    summary = alice.get("/usage/summary").json()
    spent = sum(row["cost_micros"] for row in every["items"])
    assert spent > 0
    assert sum(day["cost_micros"] for day in summary["days"]) == spent
    by_model = {item["model"]: item for item in summary["models"]}
    assert by_model["demo-1"]["requests"] == 4 and by_model["demo-1"]["cost_micros"] == spent
    assert alice.get("/usage/summary", params={"since": time.time() - 3600, "until": time.time() - 3 * 86400}).json()["days"] == []


def test_the_wallet_shows_balance_holds_and_a_paged_ledger(site):
    _, _, ids, apis, _ = site
    root, alice = apis["root"], apis["alice"]
    for cents in range(1, 6):
        assert root.post(f"/users/{ids['alice']}/topups", {"amount": f"0.0{cents}"}).status_code == 201
    wallet = alice.get("/wallet").json()
    assert wallet["balance"] == "5.15" and wallet["balance_micros"] == 5_150_000
    assert wallet["held_micros"] == 0 and wallet["holds"] == []
    first = alice.get("/wallet/ledger", params={"limit": 4}).json()
    rest = alice.get("/wallet/ledger", params={"limit": 4, "cursor": first["next_cursor"]}).json()
    rows = first["items"] + rest["items"]
    assert rest["next_cursor"] is None and len(rows) == 6  # the seed's top-up and five
    assert rows[0]["amount"] == "0.05" and rows[0]["balance_after_micros"] == 5_150_000
    assert [row["id"] for row in rows] == sorted((row["id"] for row in rows), reverse=True)
    assert apis["bob"].get("/wallet").json()["balance_micros"] == 0


def test_a_top_up_sent_twice_with_one_idempotency_key_credits_once_even_at_once(site):
    _, db, ids, apis, _ = site
    root = apis["root"]
    path = f"/users/{ids['bob']}/topups"
    headers = {"Idempotency-Key": "payment-42"}
    first = root.post(path, {"amount": "10", "note": "payment 42"}, headers=headers)
    again = root.post(path, {"amount": "10", "note": "payment 42"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json()["replayed"] is False and again.json()["replayed"] is True
    assert first.json()["ledger_id"] == again.json()["ledger_id"]
    assert again.json()["balance_after"] == "10.00"
    error_of(root.post(path, {"amount": "11"}, headers=headers), 409, "conflict")

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: root.post(path, {"amount_micros": 1_000_000}, headers={"Idempotency-Key": "burst"}), range(8)))
    assert [answer.status_code for answer in answers] == [201] * 8
    assert len({answer.json()["ledger_id"] for answer in answers}) == 1
    assert sum(not answer.json()["replayed"] for answer in answers) == 1
    assert apis["bob"].get("/wallet").json()["balance_micros"] == 11_000_000
    assert "OK" in cli(db, "check")


def test_adjustments_are_signed_and_say_why(site):
    _, _, ids, apis, _ = site
    root = apis["root"]
    taken = root.post(f"/users/{ids['alice']}/adjustments", {"amount": "-1.25", "note": "refund reversed"})
    assert taken.status_code == 201, taken.text
    assert taken.json()["amount"] == "-1.25" and taken.json()["balance_after_micros"] == 3_750_000
    assert error_of(root.post(f"/users/{ids['alice']}/adjustments", {"amount": "1"}), 400)["field"] == "note"
    assert error_of(root.post(f"/users/{ids['alice']}/adjustments", {"amount": "0", "note": "x"}), 400)["field"] == "amount"
    assert error_of(root.post(f"/users/{ids['alice']}/topups", {"amount": "-1"}), 400)["field"] == "amount"
    assert error_of(root.post(f"/users/{ids['alice']}/topups", {"amount": "1", "amount_micros": 1}), 400)["field"] == "amount"
    assert error_of(root.post("/users/99999/topups", {"amount": "1"}), 404)
    assert error_of(apis["alice"].post(f"/users/{ids['alice']}/topups", {"amount": "1"}), 403)


# --- admin: users, groups, prices, channels, site usage, logs, audit ----------------------------------


def test_admins_create_search_page_change_disable_and_reset_users(site):
    gateway, db, ids, apis, _ = site
    root = apis["root"]
    made = root.post("/users", {"name": "carol", "groups": ["default", "vip"], "password": "carol-password-1"})
    assert made.status_code == 201, made.text
    carol = made.json()
    assert carol["groups"] == ["default", "vip"] and carol["balance"] == "0.00"
    error_of(root.post("/users", {"name": "carol"}), 409, "conflict")
    assert error_of(root.post("/users", {"name": ""}), 400)["field"] == "name"
    found = root.get("/users", params={"q": "CAR"}).json()
    assert [item["name"] for item in found["items"]] == ["carol"]
    first = root.get("/users", params={"limit": 2}).json()
    rest = root.get("/users", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [item["name"] for item in first["items"] + rest["items"]] == ["root", "alice", "bob", "carol"]
    assert root.get(f"/users/{carol['id']}").json()["name"] == "carol"
    error_of(root.get("/users/99999"), 404)

    changed = root.patch(f"/users/{carol['id']}", {"groups": ["vip"], "is_admin": True}).json()
    assert changed["groups"] == ["vip"] and changed["is_admin"] is True
    error_of(root.patch(f"/users/{ids['root']}", {"is_admin": False}), 400)
    error_of(root.post(f"/users/{ids['root']}/disable"), 400)
    assert root.post(f"/users/{carol['id']}/disable").json()["enabled"] is False
    assert root.post(f"/users/{carol['id']}/enable").json()["enabled"] is True
    assert root.post(f"/users/{carol['id']}/password", {"password": "another-pass-2"}).status_code == 204
    assert error_of(root.post(f"/users/{carol['id']}/password", {"password": "short"}), 400)["field"] == "password"

    key = root.post(f"/users/{carol['id']}/keys", {"name": "for-carol", "group": "vip"})
    assert key.status_code == 201 and key.json()["key"]["user_id"] == carol["id"]
    assert [item["name"] for item in root.get(f"/users/{carol['id']}/keys").json()] == ["for-carol"]


def test_groups_and_prices(site):
    _, _, _, apis, _ = site
    root = apis["root"]
    group = root.put("/groups/vip", {"ratio": "0.8", "rpm": 60}).json()
    assert (group["name"], group["ratio"], group["ratio_ppm"], group["rpm"]) == ("vip", "0.8", 800_000, 60)
    assert "vip" in [item["name"] for item in root.get("/groups").json()]
    assert error_of(root.put("/groups/vip", {"ratio": "-1"}), 400)["field"] == "ratio"
    price = root.put("/prices/demo-2", {"input_micros_per_mtok": 2_500_000, "output_micros_per_mtok": 10_000_000})
    assert price.status_code == 200, price.text
    assert (price.json()["input_per_mtok"], price.json()["output_per_mtok"]) == ("2.50", "10.00")
    assert "demo-2" in [item["model"] for item in root.get("/prices").json()]
    assert root.delete("/prices/demo-2").status_code == 204
    error_of(root.delete("/prices/demo-2"), 404)


def test_channels_create_update_switch_test_and_delete(site):
    _, _, _, apis, _ = site
    root = apis["root"]
    made = root.post("/channels", {"name": "demo-b", "type": "demo", "base_url": "local://demo", "models": ["demo-1"], "api_keys": ["sk-upstream-secret-1"]})
    assert made.status_code == 201, made.text
    channel = made.json()
    assert "sk-upstream-secret-1" not in made.text  # upstream keys leave masked
    error_of(root.post("/channels", {"name": "demo-b", "type": "demo", "base_url": "local://demo", "models": ["x"]}), 409)
    error_of(root.post("/channels", {"name": "c", "type": "no-such-type", "base_url": "local://x", "models": ["x"]}), 400)
    assert root.patch(f"/channels/{channel['id']}", {"priority": 5}).json()["priority"] == 5
    assert root.post(f"/channels/{channel['id']}/disable").json()["enabled"] is False
    assert root.post(f"/channels/{channel['id']}/enable").json()["enabled"] is True
    probe = root.post(f"/channels/{channel['id']}/test", {}).json()
    assert probe["ok"] is True and probe["model"] == "demo-1"
    assert [item["name"] for item in root.get("/channels").json()] == ["demo", "demo-b"]
    assert root.delete(f"/channels/{channel['id']}").status_code == 204
    error_of(root.get(f"/channels/{channel['id']}"), 404)


def test_site_usage_and_everyones_logs_are_for_admins(site, seed):
    gateway, _, ids, apis, _ = site
    _, secret_a = seed.key(ids["alice"])
    _, secret_r = seed.key(ids["root"])
    assert _chat(gateway, secret_a, "a").status_code == _chat(gateway, secret_r, "r").status_code == 200
    logs = apis["root"].get("/logs").json()["items"]
    assert {row["user_id"] for row in logs} == {ids["alice"], ids["root"]}
    assert {row["user_id"] for row in apis["root"].get("/logs", params={"user_id": ids["alice"]}).json()["items"]} == {ids["alice"]}
    site_usage = apis["root"].get("/site/usage").json()
    assert sum(item["requests"] for item in site_usage["by_user"]) == 2
    error_of(apis["alice"].get("/logs"), 403)
    error_of(apis["alice"].get("/site/usage"), 403)


def test_every_write_is_in_the_audit_log_with_who_and_before_and_after(site):
    _, _, ids, apis, tokens = site
    key = apis["alice"].post("/keys", {"name": "audited"}).json()["key"]
    apis["alice"].patch(f"/keys/{key['id']}", {"name": "renamed"})
    apis["root"].post(f"/users/{ids['bob']}/topups", {"amount": "3"})
    entries = apis["root"].get("/audit").json()["items"]
    by_action = {entry["action"]: entry for entry in entries}
    update = by_action["key.update"]
    assert update["target"] == f"key {key['id']}" and update["via"] == "token" and update["user_name"] == "alice"
    assert (update["before"]["name"], update["after"]["name"]) == ("audited", "renamed")
    assert update["token_id"] is not None and update["request_id"].startswith("req_")
    assert by_action["key.create"]["before"] is None
    topup = by_action["wallet.topup"]
    assert (topup["before"]["balance_micros"], topup["after"]["balance_micros"]) == (0, 3_000_000)
    assert by_action["token.create"]["via"] == "cli"
    only_key = apis["root"].get("/audit", params={"target": f"key {key['id']}"}).json()["items"]
    assert [entry["action"] for entry in only_key] == ["key.update", "key.create"]
    error_of(apis["alice"].get("/audit"), 403)


# --- the console's session --------------------------------------------------------------------


def test_the_console_session_cookie_works_and_writes_need_its_csrf_token(site):
    gateway, db, ids, apis, _ = site
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE users SET password_hash = ? WHERE name = 'alice'", (hash_password("alice-password-1"),))
    browser = requests.Session()
    form = browser.get(gateway.url + "/console/login", timeout=10).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', form).group(1)
    signed_in = browser.post(gateway.url + "/console/login", data={"csrf": csrf, "name": "alice", "password": "alice-password-1"}, timeout=10)
    assert signed_in.status_code == 200 and "rg_session" in browser.cookies
    me = browser.get(gateway.url + "/api/v1/me", timeout=10).json()
    assert (me["user"]["name"], me["via"], me["scope"]) == ("alice", "session", "write")
    error_of(browser.post(gateway.url + "/api/v1/keys", json={"name": "s"}, timeout=10), 403, "csrf")
    error_of(browser.post(gateway.url + "/api/v1/keys", json={"name": "s"}, headers={"x-csrf-token": "wrong"}, timeout=10), 403, "csrf")
    page_csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get(gateway.url + "/console/keys", timeout=10).text).group(1)
    made = browser.post(gateway.url + "/api/v1/keys", json={"name": "s"}, headers={"x-csrf-token": page_csrf}, timeout=10)
    assert made.status_code == 201, made.text
    entry = apis["root"].get("/audit", params={"target": f"key {made.json()['key']['id']}"}).json()["items"][0]
    assert entry["via"] == "session" and entry["token_id"] is None


# --- the document --------------------------------------------------------------------------------


def test_the_openapi_document_and_its_page(site):
    gateway, *_ = site
    spec = requests.get(gateway.url + "/api/openapi.json", timeout=10).json()
    assert spec["openapi"] == "3.1.0"
    assert set(spec["components"]["securitySchemes"]) == {"accessToken", "consoleSession"}
    operations = [(method.upper(), path) for path, methods in spec["paths"].items() for method in methods]
    assert len(operations) == len(set(operations)) >= 40
    assert ("POST", "/api/v1/users/{user_id}/topups") in operations
    topup = spec["paths"]["/api/v1/users/{user_id}/topups"]["post"]
    assert "idempotency-key" in [param["name"] for param in topup["parameters"]]
    assert topup["responses"]["404"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    page = requests.get(gateway.url + "/api/docs", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "swagger-ui" in page.text  # rendered in the browser (tests/test_api_docs.py)
