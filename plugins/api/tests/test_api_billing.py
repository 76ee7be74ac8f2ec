"""Redemption codes, budgets and the operator's key locks in the management API,
through real HTTP (a gateway on loopback, the SQLite store): codes created once
and never shown again, redeemed once, refused with a status per reason and
throttled; budgets read by their user and set by admins, with the spend of real
requests in their windows; a key's owner refused (403 ``locked``) when loosening
what the operator set; every write in the audit log."""

from __future__ import annotations

import requests

from gateway_core.admin.codes import REDEEM_RULE
from gateway_core.commands.cli import main

from .test_api import Api, error_of, new_token

WRONG = "RG-AAAA-BBBB-CCCC-DDDD"


def _site(seed, start_gateway):
    db = seed.config.db_path
    ids = {"root": seed.user("root", admin=True), "alice": seed.user("alice", balance_usd=5), "bob": seed.user("bob")}
    seed.channel("demo", type="demo", base_url="local://demo", models=["demo-1"])
    seed.price("demo-1", 1_000_000, 2_000_000)
    gateway = start_gateway()
    apis = {name: Api(gateway.url, new_token(db, name, "admin" if name == "root" else "write")) for name in ids}
    return gateway, ids, apis


def audit_actions(api: Api, target: str) -> list[str]:
    return [row["action"] for row in api.get("/audit", params={"target": target}).json()["items"]]


def test_codes_are_created_once_redeemed_once_and_refused_by_reason(seed, start_gateway):
    gateway, ids, apis = _site(seed, start_gateway)
    root, alice, bob = apis["root"], apis["alice"], apis["bob"]
    created = root.post("/codes", {"count": 3, "value": "2.5", "note": "spring"})
    assert created.status_code == 201, created.text
    batch, codes = created.json()["batch"], created.json()["codes"]
    assert len(codes) == 3 and all(item["code"].startswith("RG-") for item in codes)
    listed = root.get("/codes", params={"batch": batch}).json()
    assert {item["id"] for item in listed} == {item["id"] for item in codes} and {item["state"] for item in listed} == {"open"}
    assert not any(item["code"] in root.get("/codes").text for item in codes)  # never shown again
    assert all(item["code"] not in str(row) for row in root.get("/audit").json()["items"] for item in codes)
    error_of(alice.post("/codes", {"count": 1, "value": "1"}), 403, "forbidden")

    done = alice.post("/wallet/redeem", {"code": codes[0]["code"].lower()})  # case does not matter
    assert done.status_code == 200, done.text
    assert done.json()["value"] == "2.50" and done.json()["value_micros"] == 2_500_000 and done.json()["balance_micros"] == 7_500_000
    assert alice.get("/wallet").json()["balance_micros"] == 7_500_000
    assert "wallet.redeem" in audit_actions(root, f"user {ids['alice']}")
    error = error_of(bob.post("/wallet/redeem", {"code": codes[0]["code"]}), 409, "code_used")
    assert "already been redeemed" in error["message"]
    assert error_of(bob.post("/wallet/redeem", {"code": WRONG}), 400, "code_wrong")["field"] == "code"
    assert root.post(f"/codes/{codes[1]['id']}/disable").status_code == 204
    error_of(bob.post("/wallet/redeem", {"code": codes[1]["code"]}), 409, "code_disabled")
    error_of(root.post("/codes/999999/disable"), 404, "not_found")
    assert "code.disable" in audit_actions(root, f"code {codes[1]['id']}") and "code.create" in audit_actions(root, f"codes {batch}")

    # bob has failed three times (used, wrong, disabled): two more, then even the right code waits
    for _ in range(REDEEM_RULE.free_failures - 3):
        error_of(bob.post("/wallet/redeem", {"code": WRONG}), 400, "code_wrong")
    throttled = bob.post("/wallet/redeem", {"code": codes[2]["code"]})
    error_of(throttled, 429, "code_throttled")
    assert 1 <= int(throttled.headers["retry-after"]) <= REDEEM_RULE.base_delay
    assert bob.get("/wallet").json()["balance_micros"] == 0


def test_budgets_are_read_by_their_user_and_set_by_admins(seed, start_gateway):
    gateway, ids, apis = _site(seed, start_gateway)
    root, alice, bob = apis["root"], apis["alice"], apis["bob"]
    key = alice.post("/keys", {"name": "ci"}).json()
    key_id, secret = key["key"]["id"], key["secret"]

    assert alice.get("/budgets").json()["windows"] == []
    set_user = root.patch(f"/users/{ids['alice']}/budgets", {"daily": "4", "monthly_micros": 50_000_000})
    assert set_user.status_code == 200, set_user.text
    assert set_user.json()["caps"] == {"daily": "4.00", "daily_micros": 4_000_000, "weekly": None, "weekly_micros": None,
                                       "monthly": "50.00", "monthly_micros": 50_000_000}  # fmt: skip
    set_key = root.patch(f"/keys/{key_id}/budgets", {"weekly": "3"})
    assert set_key.status_code == 200 and set_key.json()["caps"]["weekly_micros"] == 3_000_000
    assert [w["period"] for w in set_key.json()["windows"]] == ["weekly"]
    error_of(alice.patch(f"/keys/{key_id}/budgets", {"weekly": None}), 403, "forbidden")  # admins set budgets
    error_of(root.patch(f"/users/{ids['alice']}/budgets", {"daily": "-1"}), 400)

    answer = requests.post(gateway.url + "/v1/chat/completions", headers={"authorization": f"Bearer {secret}"},
                           json={"model": "demo-1", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    cost = seed.rows("SELECT cost_micros FROM usage_logs ORDER BY id DESC LIMIT 1")[0]["cost_micros"]
    assert cost > 0
    mine = alice.get("/budgets").json()
    assert mine["window"] == "calendar" and mine["timezone"] == "UTC" and mine["caps"]["daily_micros"] == 4_000_000
    windows = {(w["whose"], w["period"]): w for w in mine["windows"]}
    assert set(windows) == {("user", "daily"), ("user", "monthly"), ("key ci", "weekly")}
    assert {w["spent_micros"] for w in windows.values()} == {cost} and all(w["resets_at"] for w in windows.values())
    assert alice.get(f"/keys/{key_id}/budgets").json()["windows"] == [windows[("key ci", "weekly")]]
    error_of(bob.get(f"/keys/{key_id}/budgets"), 404, "not_found")  # never another user's
    assert root.get(f"/users/{ids['alice']}/budgets").json()["windows"] == mine["windows"]
    assert "user.budgets" in audit_actions(root, f"user {ids['alice']}") and "key.budgets" in audit_actions(root, f"key {key_id}")
    assert root.patch(f"/keys/{key_id}/budgets", {"weekly": None}).json()["caps"]["weekly"] is None  # the operator clears it


def test_a_keys_owner_cannot_loosen_what_the_operator_set(seed, start_gateway):
    gateway, ids, apis = _site(seed, start_gateway)
    root, alice = apis["root"], apis["alice"]
    made = root.post(f"/users/{ids['alice']}/keys", {"name": "managed", "rpm": 10, "quota": "2", "models": ["demo-1"]})
    assert made.status_code == 201, made.text
    key_id = made.json()["key"]["id"]

    assert alice.patch(f"/keys/{key_id}", {"rpm": 5, "quota": "1"}).status_code == 200  # tighter: fine
    for loosen in ({"rpm": 0}, {"rpm": 20}, {"quota": None}, {"quota": "3"}, {"models": []}):
        error = error_of(alice.patch(f"/keys/{key_id}", loosen), 403, "locked")
        assert "set by the gateway's operator" in error["message"]
    after = alice.get(f"/keys/{key_id}").json()
    assert after["limits"]["requests_per_minute"] == 5 and after["quota_micros"] == 1_000_000  # nothing half-written

    error_of(root.post(f"/keys/{key_id}/disable"), 404, "not_found")  # /keys are the caller's own
    assert main(["--db", seed.config.db_path, "key", "disable", str(key_id)]) == 0  # the operator disables it
    error = error_of(alice.post(f"/keys/{key_id}/enable"), 403, "locked")
    assert "disabled state" in error["message"]
    # a key the owner made is theirs to loosen
    own = alice.post("/keys", {"name": "own", "rpm": 10}).json()["key"]["id"]
    assert alice.patch(f"/keys/{own}", {"rpm": 0}).status_code == 200


def test_a_malformed_amount_is_refused_as_the_cli_refuses_it_and_the_document_says_one_of_two(seed, start_gateway, capsys):
    gateway, ids, apis = _site(seed, start_gateway)
    root = apis["root"]
    error = error_of(root.post(f"/users/{ids['alice']}/topups", {"amount": "12,50"}), 400)
    assert error["message"] == "amount must be a decimal number like 12.50, got '12,50'"
    capsys.readouterr()
    assert main(["--db", seed.config.db_path, "wallet", "topup", "alice", "12,50"]) != 0
    assert error["message"] in capsys.readouterr().err  # the CLI's words
    error = error_of(root.post(f"/users/{ids['alice']}/topups", {"amount": 12.5}), 400)
    assert error["message"] == 'amount must be a decimal number in a string, like "12.50", got 12.5'
    error = error_of(root.post("/codes", {"count": 1, "value": "ten"}), 400)
    assert error["message"] == "value must be a decimal number like 12.50, got 'ten'"
    document = requests.get(gateway.url + "/api/openapi.json", timeout=10).json()
    topup = document["paths"]["/api/v1/users/{user_id}/topups"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert topup["oneOf"] == [{"required": ["amount"]}, {"required": ["amount_micros"]}]
