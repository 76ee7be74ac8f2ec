"""Every route of ``/api/v1/teams`` through real HTTP, called by each kind of caller
(docs/teams.md): a site admin, the team's admin, another team's admin, a member, a
viewer and an outsider. A team one is not in is 404, a role that does not allow
the operation 403 (a site-only operation: 403 for everyone else), what is allowed
succeeds. Each allowed call runs on a world of its own, so no call sees another's
change."""

from __future__ import annotations

import itertools
import re

import pytest
import requests

from gateway_core.admin import Admin, team_keys, teams
from relaygate_api.teams import OPERATIONS
from gateway_core.config import Config
from gateway_core.testing import GatewayThread, Seed

ACTORS = ("site", "lead", "other_lead", "dev", "viewer", "outsider")
NOT_IN = {"other_lead": 404, "outsider": 404}
SITE_ONLY = {actor: 403 for actor in ACTORS[1:]}


def expected(site, lead, dev, viewer) -> dict[str, int]:
    return {"site": site, "lead": lead, "dev": dev, "viewer": viewer, **NOT_IN}


# (method, path) -> the body sent, and the status each caller gets
CASES = {
    ("GET", "/teams"): (None, dict.fromkeys(ACTORS, 200)),
    ("POST", "/teams"): ({"name": "new-team"}, {"site": 201, **SITE_ONLY}),
    ("GET", "/teams/{team_id}"): (None, expected(200, 200, 200, 200)),
    ("PATCH", "/teams/{team_id}"): ({"rpm": 5, "daily_budget_micros": 1_000_000}, {"site": 200, **SITE_ONLY}),
    ("DELETE", "/teams/{team_id}"): (None, {"site": 204, **SITE_ONLY}),
    ("POST", "/teams/{team_id}/members"): ({"user_id": "{newbie}", "role": "member"}, expected(201, 201, 403, 403)),
    ("PATCH", "/teams/{team_id}/members/{user_id}"): ({"role": "viewer"}, expected(200, 200, 403, 403)),
    ("DELETE", "/teams/{team_id}/members/{user_id}"): (None, expected(204, 204, 403, 403)),
    ("GET", "/teams/{team_id}/keys"): (None, expected(200, 200, 200, 403)),
    ("POST", "/teams/{team_id}/keys"): ({"service": True, "name": "svc"}, expected(201, 201, 403, 403)),
    ("PATCH", "/teams/{team_id}/keys/{key_id}/limits"): ({"daily_budget_micros": 1_000}, expected(200, 200, 404, 403)),
    ("PATCH", "/teams/{team_id}/keys/{key_id}"): ({"name": "renamed", "allow_ips": ["10.0.0.0/8"]}, expected(200, 200, 404, 403)),
    ("DELETE", "/teams/{team_id}/keys/{key_id}"): (None, expected(200, 200, 404, 403)),
    ("POST", "/teams/{team_id}/topup"): ({"amount": "1.50"}, {"site": 200, **SITE_ONLY}),
    ("GET", "/teams/{team_id}/usage"): (None, expected(200, 200, 200, 200)),
    ("GET", "/teams/{team_id}/budgets"): (None, expected(200, 200, 200, 200)),
}
_worlds = itertools.count()


def test_every_teams_route_has_its_case():
    assert {(op.method, op.path) for op in OPERATIONS} == set(CASES)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    config = Config(db_path=str(tmp_path_factory.mktemp("api-teams") / "relaygate.db"))
    with Seed(config) as seed:
        seed.user("root", admin=True)
    with GatewayThread(config) as running, Seed(config) as seed:
        yield running.url, seed


class _As:
    def __init__(self, user_id: int) -> None:
        self.user_id, self.is_admin = user_id, False


def make_world(seed) -> tuple[dict[str, int], dict[str, str]]:
    """Team eng-N (lead, dev, viewer, an extra member, a service key) and ops-N (its
    own lead); an outsider and a newbie in no team. Ids by name, and a token of each caller."""
    n = next(_worlds)
    names = ("lead", "other_lead", "dev", "viewer", "outsider", "extra", "newbie")
    ids = {name: seed.user(f"{name}-{n}") for name in names}
    ids["site"] = seed.user(f"site-{n}", admin=True)

    async def build(port):
        admin = Admin(port)
        eng = await teams.create_team(admin, f"eng-{n}")
        ops = await teams.create_team(admin, f"ops-{n}")
        for name, role in (("lead", "admin"), ("dev", "member"), ("viewer", "viewer"), ("extra", "member")):
            await teams.set_member(admin, eng.id, ids[name], role)
        await teams.set_member(admin, ops.id, ids["other_lead"], "admin")
        key, _ = await team_keys.create_team_key(admin, eng.id, service=True, name="ci")
        tokens = {}
        for actor in ACTORS:
            _, secret = await port.create_token(ids[actor], name="t", scope="admin" if actor == "site" else "write", expires_at=None)
            tokens[actor] = secret
        return {**ids, "team_id": eng.id, "user_id": ids["extra"], "key_id": key.id}, tokens

    return seed._admin(build)


def request(url: str, method: str, path: str, body, values: dict[str, int], token: str) -> requests.Response:
    path = re.sub(r"\{(\w+)\}", lambda found: str(values[found.group(1)]), path)
    if isinstance(body, dict):
        body = {name: values[value[1:-1]] if isinstance(value, str) and value.startswith("{") else value for name, value in body.items()}
    return requests.request(method, url + "/api/v1" + path, headers={"authorization": f"Bearer {token}"}, json=body, timeout=30)


@pytest.mark.parametrize("case", sorted(CASES), ids=[f"{m} {p}" for m, p in sorted(CASES)])
def test_each_caller_gets_what_their_role_allows(gateway, case):
    url, seed = gateway
    body, statuses = CASES[case]
    denied = make_world(seed)  # callers that are refused change nothing: one world for all of them
    for actor, status in statuses.items():
        values, tokens = denied if status >= 400 else make_world(seed)
        answer = request(url, *case, body, values, tokens[actor])
        assert answer.status_code == status, (actor, answer.text)
        if status >= 400:
            assert answer.json()["error"]["code"] == {403: "forbidden", 404: "not_found"}[status]
            if actor in NOT_IN:  # a team one is not in is never named
                assert "eng-" not in answer.text


def test_a_team_admin_cannot_loosen_a_limit_the_site_set_nor_see_another_team(gateway):
    url, seed = gateway
    values, tokens = make_world(seed)
    path = "/teams/{team_id}/keys/{key_id}/limits"
    assert request(url, "PATCH", path, {"daily_budget_micros": 1_000}, values, tokens["site"]).status_code == 200
    loosened = request(url, "PATCH", path, {"daily_budget_micros": 5_000}, values, tokens["lead"])
    assert loosened.status_code == 403 and loosened.json()["error"]["code"] == "locked"
    assert request(url, "PATCH", path, {"daily_budget_micros": 500}, values, tokens["lead"]).status_code == 200
    listed = request(url, "GET", "/teams", None, values, tokens["lead"]).json()
    assert [(team["id"], team["role"]) for team in listed] == [(values["team_id"], "admin")]


def test_a_member_creates_and_deletes_their_own_key_paid_by_the_team(gateway):
    url, seed = gateway
    values, tokens = make_world(seed)
    made = request(url, "POST", "/teams/{team_id}/keys", {"name": "laptop"}, values, tokens["dev"])
    assert made.status_code == 201 and made.json()["secret"].startswith("sk-")
    key = made.json()["key"]
    assert key["member_id"] == values["dev"] and key["team_id"] == values["team_id"]
    refused = request(url, "POST", "/teams/{team_id}/keys", {"name": "x"}, values, tokens["viewer"])
    assert refused.status_code == 403 and "viewer" in refused.json()["error"]["message"]
    site = request(url, "POST", "/teams/{team_id}/keys", {"name": "x"}, values, tokens["site"])
    assert site.status_code == 400 and site.json()["error"]["field"] == "service"
    mine = request(url, "GET", "/teams/{team_id}/keys", None, values, tokens["dev"]).json()
    assert [k["name"] for k in mine] == ["laptop"]
    gone = request(url, "DELETE", "/teams/{team_id}/keys/{key_id}", None, {**values, "key_id": key["id"]}, tokens["dev"])
    assert gone.status_code == 200 and gone.json()["deleted"]


def test_the_teams_budgets_and_where_they_stand(gateway):
    url, seed = gateway
    values, tokens = make_world(seed)
    set_caps = request(url, "PATCH", "/teams/{team_id}", {"daily_budget_micros": 2_000_000}, values, tokens["site"])
    assert set_caps.status_code == 200
    answer = request(url, "GET", "/teams/{team_id}/budgets", None, values, tokens["viewer"]).json()
    assert answer["caps"]["daily_micros"] == 2_000_000
    assert [(w["whose"], w["period"], w["spent_micros"]) for w in answer["windows"]] == [("user", "daily", 0)]


def test_the_teams_usage_says_who_spent_what(gateway):
    url, seed = gateway
    values, tokens = make_world(seed)
    answer = request(url, "GET", "/teams/{team_id}/usage", None, values, tokens["viewer"])
    assert answer.status_code == 200 and answer.json()["members"] == []  # no request yet (tests/test_teams.py counts them)
    assert request(url, "GET", "/teams/{team_id}/usage", None, values, tokens["outsider"]).status_code == 404


def test_a_team_key_is_edited_by_its_member_or_the_teams_admins_within_what_the_site_set(gateway):
    url, seed = gateway
    values, tokens = make_world(seed)
    path = "/teams/{team_id}/keys/{key_id}"
    own = request(url, "POST", "/teams/{team_id}/keys", {"name": "laptop"}, values, tokens["dev"]).json()["key"]
    mine = {**values, "key_id": own["id"]}
    edited = request(url, "PATCH", path, {"name": "desk", "allow_ips": ["192.0.2.7"]}, mine, tokens["dev"])
    assert edited.status_code == 200, edited.text
    assert (edited.json()["name"], edited.json()["allow_ips"], edited.json()["models"]) == ("desk", ["192.0.2.7/32"], [])
    others = request(url, "POST", "/teams/{team_id}/keys", {"name": "x"}, values, tokens["lead"])
    theirs = {**values, "key_id": others.json()["key"]["id"]}
    assert request(url, "PATCH", path, {"name": "mine-now"}, theirs, tokens["dev"]).status_code == 404  # another's key: not found
    assert request(url, "PATCH", path, {"name": "y"}, mine, tokens["viewer"]).status_code == 403
    assert request(url, "PATCH", path, {"name": "y"}, mine, tokens["outsider"]).status_code == 404
    assert request(url, "PATCH", path, {"name": "y"}, mine, tokens["other_lead"]).status_code == 404
    assert request(url, "PATCH", path, {"name": "  "}, mine, tokens["dev"]).json()["error"]["field"] == "name"
    bad = request(url, "PATCH", path, {"allow_ips": ["not-a-network"]}, mine, tokens["dev"])
    assert bad.status_code == 400 and "not-a-network" in bad.json()["error"]["message"]

    assert request(url, "PATCH", path, {"allow_ips": ["10.0.0.0/8"]}, mine, tokens["site"]).status_code == 200  # the site's: locked
    for caller in ("lead", "dev"):
        widened = request(url, "PATCH", path, {"allow_ips": []}, mine, tokens[caller])
        assert widened.status_code == 403 and widened.json()["error"]["code"] == "locked", widened.text
        assert request(url, "PATCH", path, {"allow_ips": ["0.0.0.0/0"]}, mine, tokens[caller]).json()["error"]["code"] == "locked"
    narrowed = request(url, "PATCH", path, {"allow_ips": ["10.1.0.0/16"]}, mine, tokens["lead"])
    assert narrowed.status_code == 200 and narrowed.json()["allow_ips"] == ["10.1.0.0/16"]
    audit = request(url, "GET", "/audit", None, values, tokens["site"]).json()["items"]
    assert any(row["action"] == "team.key.update" and row["target"] == f"key {own['id']}" for row in audit)
