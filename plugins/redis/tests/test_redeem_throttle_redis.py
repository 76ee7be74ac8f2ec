"""Redemption attempts through the management API of two gateways sharing one
Redis (as two replicas): the failures one gateway counted throttle the user on the
other, and one user's failures do not throttle another user from another address."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import requests

from gateway_core.admin.codes import REDEEM_RULE
from gateway_core.commands.cli import main
from gateway_core.config import config_from_mapping

WRONG = "RG-AAAA-BBBB-CCCC-DDDD"


def new_token(db: str, user: str, scope: str = "write") -> str:
    """A personal access token of ``user``, created through the CLI (as ``plugins/api/tests/test_api.py`` does)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--db", db, "token", "create", user, "--scope", scope, "--json"]) == 0
    created = json.loads(out.getvalue())
    assert created["token"].startswith("rgt-") and isinstance(created["id"], int)
    return str(created["token"])


class Api:
    def __init__(self, url: str, token: str) -> None:
        self.url = url + "/api/v1"
        self.http = requests.Session()
        self.http.headers["authorization"] = f"Bearer {token}"

    def post(self, path: str, body: dict) -> requests.Response:
        return self.http.request("POST", self.url + path, json=body, timeout=30)


def error_of(response: requests.Response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["request_id"] == response.headers["x-request-id"]
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    return error


@pytest.fixture
def relaygate_config(tmp_path, redis_prefix):
    gateway = {"redis": "redis://127.0.0.1:6379/0", "redis_prefix": redis_prefix}
    return config_from_mapping({"load": ["demo"], "gateway": gateway}, db_path=str(tmp_path / "relaygate.db"))


def test_failures_on_one_gateway_throttle_the_user_on_the_other(seed, start_gateway):
    db = seed.config.db_path
    seed.user("root", admin=True)
    seed.user("alice")
    seed.user("bob")
    first, second = start_gateway(), start_gateway()
    root = Api(first.url, new_token(db, "root", "admin"))
    alice_token, bob_token = new_token(db, "alice", "write"), new_token(db, "bob", "write")
    codes = root.post("/codes", {"count": 2, "value": "1"}).json()["codes"]
    on = [Api(first.url, alice_token), Api(second.url, alice_token)]
    for n in range(REDEEM_RULE.free_failures):
        error_of(on[n % 2].post("/wallet/redeem", {"code": WRONG}), 400, "code_wrong")
    for api in on:  # both gateways know: even the right code waits
        throttled = api.post("/wallet/redeem", {"code": codes[0]["code"]})
        error_of(throttled, 429, "code_throttled")
        assert int(throttled.headers["retry-after"]) >= 1
    # another user is not throttled by alice's failures (the test client's address is shared,
    # and five failures are below the address's ten)
    done = Api(second.url, bob_token).post("/wallet/redeem", {"code": codes[1]["code"]})
    assert done.status_code == 200, done.text
