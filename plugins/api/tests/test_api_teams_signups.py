"""``/api/v1/signups`` through real HTTP (docs/teams.md#self-sign-up): a site admin
lists the single sign-on sign-ups waiting for approval, approves one (the user is
made in the sign-up's default group, team and role, and an audit row says so) or
rejects one; a sign-up decided once cannot be decided again; others are refused."""

from __future__ import annotations

import pytest
import requests

from gateway_core.admin import Admin, signups, teams
from gateway_core.config import Config
from gateway_core.testing import GatewayThread, Seed


@pytest.fixture
def gateway(tmp_path):
    config = Config(db_path=str(tmp_path / "relaygate.db"))
    with Seed(config) as seed:
        seed.user("root", admin=True)
        ana = seed.user("ana")

        async def prepare(port):
            admin = Admin(port)
            await teams.create_team(admin, "newcomers", groups=["default", "trial"])
            for name in ("zoe@example.com", "yan@example.com"):
                await signups.request_signup(admin, name, team="newcomers", role="viewer", group="trial")
            tokens = {}
            for user_id, scope in ((1, "admin"), (ana, "write")):
                _, tokens[scope] = await port.create_token(user_id, name="t", scope=scope, expires_at=None)
            return tokens

        tokens = seed._admin(prepare)
    with GatewayThread(config) as running:
        yield running.url + "/api/v1", tokens


def call(gateway, method: str, path: str, token: str = "admin", **params) -> requests.Response:
    url, tokens = gateway
    return requests.request(method, url + path, headers={"authorization": f"Bearer {tokens[token]}"}, params=params, timeout=30)


def test_a_site_admin_approves_and_rejects_sign_ups(gateway):
    pending = call(gateway, "GET", "/signups").json()
    assert [(s["name"], s["team"], s["role"], s["group"], s["status"]) for s in pending] == [
        ("zoe@example.com", "newcomers", "viewer", "trial", "pending"), ("yan@example.com", "newcomers", "viewer", "trial", "pending")]
    zoe, yan = (s["id"] for s in pending)

    approved = call(gateway, "POST", f"/signups/{zoe}/approve")
    assert approved.status_code == 200, approved.text
    assert approved.json()["signup"]["status"] == "approved" and approved.json()["signup"]["decided_at"]
    user = approved.json()["user"]
    assert (user["name"], user["groups"], user["balance_micros"], user["is_admin"]) == ("zoe@example.com", ["trial"], 0, False)
    team = next(t for t in call(gateway, "GET", "/teams").json() if t["name"] == "newcomers")
    members = call(gateway, "GET", f"/teams/{team['id']}").json()["members"]
    assert [(m["user_name"], m["role"]) for m in members] == [("zoe@example.com", "viewer")]

    again = call(gateway, "POST", f"/signups/{zoe}/approve")
    assert again.status_code == 409 and "approved already" in again.json()["error"]["message"]
    rejected = call(gateway, "POST", f"/signups/{yan}/reject")
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    assert call(gateway, "POST", f"/signups/{yan}/approve").status_code == 409
    assert call(gateway, "POST", "/signups/999/reject").status_code == 404
    assert call(gateway, "GET", "/signups").json() == []
    assert [s["status"] for s in call(gateway, "GET", "/signups", status="all").json()] == ["approved", "rejected"]
    assert call(gateway, "GET", "/signups", status="maybe").status_code == 400

    actions = [(row["action"], row["target"]) for row in call(gateway, "GET", "/audit").json()["items"]]
    assert ("signup.approve", f"signup {zoe}") in actions and ("signup.reject", f"signup {yan}") in actions
    assert ("user.create", f"user {user['id']}") in actions


def test_only_a_site_admin_decides(gateway):
    pending = call(gateway, "GET", "/signups").json()
    for method, path in (("GET", "/signups"), ("POST", f"/signups/{pending[0]['id']}/approve"), ("POST", f"/signups/{pending[0]['id']}/reject")):
        refused = call(gateway, method, path, token="write")
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert [s["status"] for s in call(gateway, "GET", "/signups").json()] == ["pending", "pending"]
