"""Schemathesis over the management API's whole OpenAPI document, with an admin
token, against a gateway on loopback: no answer is a 5xx, and every answer
matches its documented status, content type and schema. The examples per
operation are bounded (:data:`EXAMPLES`) so the suite stays fast."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from relaygate_api.openapi import document
from relaygate_api.mount import OPERATIONS, _version
from gateway_core.commands.cli import main
from gateway_core.config import Config
from gateway_core.testing import GatewayThread, Seed

EXAMPLES = 10
schema = schemathesis.openapi.from_dict(document(OPERATIONS, _version()))


def cli(db: str, *argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--db", db, *argv]) == 0
    return out.getvalue()


class Tokens:
    """Admin tokens: when a case revokes the one in use (``DELETE /tokens/{id}``
    and ``DELETE /users/{user_id}/tokens/{token_id}`` may draw its id), the run
    moves to the next."""

    def __init__(self, db: str, count: int = 12) -> None:
        self.left = [json.loads(cli(db, "token", "create", "root", "--scope", "admin", "--json"))["token"] for _ in range(count)]

    def current(self) -> str:
        return self.left[0]

    def revoked(self) -> None:
        self.left.pop(0)
        assert self.left, "every admin token was revoked"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("api-schema") / "relaygate.db")
    config = Config(db_path=db)
    with Seed(config) as seed:
        root = seed.user("root", admin=True, balance_usd=10)
        alice = seed.user("alice", balance_usd=1)
        seed.key(root, name="roots")
        seed.key(alice, name="alices")
        seed.channel("demo", type="demo", base_url="local://demo", models=["demo-1"])
    tokens = Tokens(db)
    with GatewayThread(config) as running:
        served = requests.get(running.url + "/api/openapi.json", timeout=10).json()
        assert served == json.loads(json.dumps(document(OPERATIONS, _version())))  # the document is the code's
        for text in ("one", "two"):  # a usage log to page through
            requests.post(running.url + "/v1/chat/completions", headers={"authorization": "Bearer " + tokens.current()},
                          json={"model": "demo-1", "messages": [{"role": "user", "content": text}]}, timeout=10)  # fmt: skip
        yield running, tokens


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
def test_every_operation_answers_as_documented(case, gateway):
    running, tokens = gateway
    response = case.call_and_validate(
        base_url=running.url, headers={"Authorization": "Bearer " + tokens.current()},
        excluded_checks=[positive_data_acceptance],  # a valid shape may still be refused: a past expiry, an unknown group
    )
    assert response.status_code < 500, response.text
    if response.status_code == 401:
        tokens.revoked()
