"""Who may call each operation of the management API, for every operation in
its declaration (:data:`relaygate_api.mount.OPERATIONS`) through real HTTP:
no credentials, a revoked token and an expired one are 401; a read-only token on
a write and a non-admin's token on an admin operation are 403; another user's
key or token in the path is 404, never its data."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
import time

import pytest
import requests

from relaygate_api.mount import OPERATIONS
from gateway_core.admin import Admin, signups
from gateway_core.commands.cli import main
from gateway_core.config import Config
from gateway_core.testing import GatewayThread, Seed

IDS = [f"{operation.method} {operation.path}" for operation in OPERATIONS]


def cli(db: str, *argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--db", db, *argv]) == 0
    return out.getvalue()


def token(db: str, user: str, scope: str, *extra: str) -> tuple[int, str]:
    made = json.loads(cli(db, "token", "create", user, "--scope", scope, "--json", *extra))
    return made["id"], made["token"]


async def pending_signup(port) -> int:
    """A single sign-on sign-up waiting for approval (docs/teams.md#self-sign-up)."""
    found, _ = await signups.request_signup(Admin(port), "carol@example.com", team="", role="member", group="default")
    return found.id


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("api-access") / "relaygate.db")
    config = Config(db_path=db)
    with Seed(config) as seed:
        alice = seed.user("alice", balance_usd=1)
        seed.user("bob")
        seed.user("root", admin=True)
        alices_key, _ = seed.key(alice, name="alices-secret-name")
        channel = seed.channel("demo", type="demo", base_url="local://demo", models=["demo-1"])
        signup_id = seed._admin(pending_signup)
    alices_token, _ = token(db, "alice", "write")
    tokens = {
        "bob_read": token(db, "bob", "read")[1], "bob_write": token(db, "bob", "write")[1],
        "revoked": token(db, "bob", "write"), "expired": token(db, "bob", "write", "--expires", "2099-01-01"),
    }  # fmt: skip
    cli(db, "token", "revoke", str(tokens["revoked"][0]))
    [code] = json.loads(cli(db, "code", "create", "--count", "1", "--value", "1", "--json"))
    team = json.loads(cli(db, "team", "add", "eng", "--json"))  # bob is in no team: its paths are 404 to him
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE access_tokens SET expires_at = ? WHERE id = ?", (time.time() - 1, tokens["expired"][0]))
    values = {"key_id": alices_key, "token_id": alices_token, "user_id": alice, "channel_id": channel, "name": "default", "model": "demo-1",
              "code_id": code["id"], "team_id": team["id"], "signup_id": signup_id}
    with GatewayThread(config) as gateway:
        yield gateway.url, values, {**tokens, "revoked": tokens["revoked"][1], "expired": tokens["expired"][1]}


def call(world, operation, token: str | None) -> requests.Response:
    url, values, _ = world
    path = re.sub(r"\{(\w+)\}", lambda found: str(values[found.group(1)]), operation.path)
    headers = {"authorization": f"Bearer {token}"} if token else {}
    body = {} if operation.body is not None else None
    return requests.request(operation.method, url + "/api/v1" + path, headers=headers, json=body, timeout=30)


def code_of(response: requests.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert "alices-secret-name" not in response.text
    error = response.json()["error"]
    assert error["request_id"] == response.headers["x-request-id"]
    return str(error["code"])


@pytest.mark.parametrize("operation", OPERATIONS, ids=IDS)
def test_no_credentials_a_revoked_token_and_an_expired_one_are_401(world, operation):
    tokens = world[2]
    assert code_of(call(world, operation, None), 401) == "unauthenticated"
    assert code_of(call(world, operation, tokens["revoked"]), 401) == "invalid_token"
    assert code_of(call(world, operation, tokens["expired"]), 401) == "invalid_token"


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.scope != "read"], ids=[i for i, op in zip(IDS, OPERATIONS) if op.scope != "read"])
def test_a_read_only_token_on_a_write_is_403(world, operation):
    assert code_of(call(world, operation, world[2]["bob_read"]), 403) in ("insufficient_scope", "forbidden")


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.scope == "admin"], ids=[i for i, op in zip(IDS, OPERATIONS) if op.scope == "admin"])
def test_a_users_write_token_on_an_admin_operation_is_403(world, operation):
    assert code_of(call(world, operation, world[2]["bob_write"]), 403) == "forbidden"


OWNED = [op for op in OPERATIONS if op.scope != "admin" and ("{key_id}" in op.path or "{token_id}" in op.path or "{team_id}" in op.path)]


@pytest.mark.parametrize("operation", OWNED, ids=[f"{op.method} {op.path}" for op in OWNED])
def test_another_users_key_token_or_team_is_404(world, operation):
    assert code_of(call(world, operation, world[2]["bob_write"]), 404) == "not_found"
