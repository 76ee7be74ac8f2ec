"""The whole story of a team (docs/teams.md, *Walk-through*), end to end with real parts:
a site admin sets the team up with the real ``relaygate`` command line on the gateway's
store; the gateway maps a group of a real OpenID provider (``oidc-provider`` on
loopback) to the team; a person of that group signs in through it in Chromium, lands on
the team's page as a member, makes a key of the team and an access token there; the
official ``openai`` SDK gets answers with the key (the demo adapter's upstream), charged
to the team's wallet exactly, up to the team's requests per minute and then refused in
OpenAI's shape; the management API answers the member's spend to the token and refuses
a site admin's route; the command line shows the member and their spend."""

from __future__ import annotations

import json
import re
import threading
import time

import openai
import pytest
import requests

from gateway_core.commands.cli import main
from gateway_core.config import Config
from gateway_core.money import format_usd

from .test_browser_sso import sso_sign_in

RPM = 2  # the team's requests per minute, every key of it together
RATIO_PPM = 2_000_000  # the team's group costs twice the model's price
PRICE_IN, PRICE_OUT = 3, 15  # micro-USD per token: 3 and 15 USD per million tokens
TOPUP = 20_000_000  # micro-USD in the team's wallet
PERSON = "mia@example.com"


@pytest.fixture
def relaygate(seed, tmp_path, capsys):
    """``relaygate(*argv)`` → stdout of the real command line on the gateway's store (every
    installed plugin), run in a thread of its own as from a terminal; a failure fails the test."""
    plugins = tmp_path / "every-plugin.toml"
    plugins.write_text("# every installed plugin\n")

    def run(*argv: str) -> str:
        answer: list[int] = []
        thread = threading.Thread(target=lambda: answer.append(main([*argv, "--db", seed.config.db_path, "--plugins", str(plugins)])))
        capsys.readouterr()
        thread.start()
        thread.join(60)
        out, err = capsys.readouterr()
        assert answer == [0], (argv, err)
        return out

    return run


def settled(seed, request_id: str) -> dict:
    """The usage row of a request, once the gateway has settled it (after the answer)."""
    for _ in range(100):
        rows = seed.rows("SELECT user_id, key_id, team_id, cost_micros, status FROM usage_logs WHERE request_id = ?", (request_id,))
        if rows and seed.rows("SELECT id FROM ledger WHERE request_id = ? AND kind = 'capture'", (request_id,)):
            return rows[0]
        time.sleep(0.05)
    raise AssertionError(f"request {request_id} was not settled")


def test_a_member_signs_in_through_sso_and_works_inside_the_team(chromium, oidc, users, seed, start_gateway, relaygate):
    # the site admin, on the command line: a group with a priced model, the team, its money and its limit
    relaygate("group", "set", "acme-models", "--ratio", "2")
    relaygate("channel", "add", "acme-demo", "--type", "demo", "--base-url", "local://demo", "--models", "demo-chat",
              "--groups", "acme-models", "--api-key", "sk-upstream-acme", "--setting", "delay_ms=0")  # fmt: skip
    relaygate("price", "set", "demo-chat", "--input", str(PRICE_IN), "--output", str(PRICE_OUT))
    team = json.loads(relaygate("team", "add", "acme", "--groups", "acme-models", "--json"))
    assert "Credited 20.00 USD to team 'acme'" in relaygate("team", "topup", "acme", "20")
    assert json.loads(relaygate("team", "edit", "acme", "--rpm", str(RPM), "--json"))["limits"]["rpm"] == RPM
    team_id, account = team["id"], team["account_id"]

    # the gateway's single sign-on maps the provider's group to the team, with the member role
    provider = oidc()
    provider.set_accounts({"mia": {"email": PERSON, "groups": ["acme-llm", "staff"]}})
    sso = provider.settings(team_roles={"acme-llm": "acme:member"}, allowed_domains=["example.com"])
    gateway = start_gateway(Config(db_path=seed.config.db_path, plugins={"console": {"sso": sso}}))
    provider.start(gateway.url + "/console/sso/callback", gateway.url + "/console/login")

    # she opens the team's page, signs in at the provider and lands there, a member
    context, errors = chromium
    page = context.new_page()
    team_page = f"{gateway.url}/console/teams/{team_id}"
    sso_sign_in(page, gateway, provider, "mia", start=team_page)
    assert page.url == team_page
    assert page.inner_text("h1") == "acme (you: member)"
    assert page.locator("#add-member").count() == 0 and page.locator("#new-team-key").count() == 1

    # her own key in the team (its secret shown once), and a personal access token
    page.fill("#new-team-key input[name=name]", "mia-laptop")
    page.select_option("#new-team-key select[name=group]", "acme-models")
    page.click("#new-team-key button[type=submit]")
    page.wait_for_url(re.compile(rf".*/console/teams/{team_id}/keys/\d+/created$"))
    key_id = int(page.url.split("/keys/")[1].split("/")[0])
    secret = page.inner_text("#secret")
    assert secret.startswith("sk-")
    page.goto(gateway.url + "/console/tokens")
    page.fill("form[action$='/tokens/new'] input[name=name]", "usage script")
    page.select_option("form[action$='/tokens/new'] select[name=scope]", "write")
    page.click("form[action$='/tokens/new'] button[type=submit]")
    page.wait_for_url(re.compile(r".*/console/tokens/\d+/created$"))
    token = page.inner_text("#secret")
    assert token.startswith("rgt-")

    # the official SDK with her key: answers up to the team's rpm, each charged to the team exactly
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    expected = 0
    request_ids = []
    for _ in range(RPM):
        raw = client.chat.completions.with_raw_response.create(model="demo-chat", messages=[{"role": "user", "content": "hello"}])
        usage = raw.parse().usage
        assert usage is not None and usage.prompt_tokens > 0 and usage.completion_tokens > 0
        cost = (usage.prompt_tokens * PRICE_IN + usage.completion_tokens * PRICE_OUT) * RATIO_PPM // 1_000_000
        row = settled(seed, raw.headers["x-request-id"])
        assert row == {"user_id": account, "key_id": key_id, "team_id": team_id, "cost_micros": cost, "status": 200}
        charged = seed.rows("SELECT sum(amount_micros) AS total FROM ledger WHERE request_id = ? AND user_id = ?", (raw.headers["x-request-id"], account))
        assert charged == [{"total": -cost}], "the ledger holds the team's charge, to the micro-USD"
        expected += cost
        request_ids.append(raw.headers["x-request-id"])
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "one too many"}])
    assert refused.value.status_code == 429 and refused.value.code == "rate_limit_exceeded"
    assert isinstance(refused.value.body, dict) and {"message", "type", "code"} <= set(refused.value.body)
    assert f"may make {RPM} requests per minute" in refused.value.message
    assert int(refused.value.response.headers["retry-after"]) >= 1
    balance = seed.rows("SELECT balance_micros FROM users WHERE id = ?", (account,))[0]["balance_micros"]
    assert balance == TOPUP - expected
    assert seed.rows("SELECT balance_micros FROM users WHERE name = ?", (PERSON,)) == [{"balance_micros": 0}], "not paid by her"
    assert seed.check().ok

    # the team's page shows her spend, by member
    page.goto(team_page)
    row = page.locator("#by-member tbody tr", has_text=PERSON)
    assert row.locator("td").nth(0).inner_text() == str(RPM + 1)  # the refused request is hers too, an error at no cost
    assert row.locator("td").nth(3).inner_text() == format_usd(expected)  # exact to the micro-USD
    assert row.locator("td").nth(4).inner_text() == "1"

    # the management API with her token: the team's usage by member; a site admin's route refused
    bearer = {"Authorization": f"Bearer {token}"}
    answer = requests.get(f"{gateway.url}/api/v1/teams/{team_id}/usage", headers=bearer, timeout=10)
    assert answer.status_code == 200, answer.text
    usage_now = answer.json()
    assert usage_now["cost_micros"] == expected
    assert {m["member"]: (m["requests"], m["errors"], m["cost_micros"]) for m in usage_now["members"]} == {PERSON: (RPM + 1, 1, expected)}
    assert {item["request_id"] for item in usage_now["items"]} >= set(request_ids)
    for method, path in (("GET", "/api/v1/users"), ("POST", f"/api/v1/teams/{team_id}/topup")):
        answer = requests.request(method, gateway.url + path, headers=bearer, json={"amount": "100"}, timeout=10)
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden", (path, answer.text)

    # the command line shows her as a member, and her spend
    shown = json.loads(relaygate("team", "show", "acme", "--json"))
    assert [(m["user"], m["role"]) for m in shown["members"]] == [(PERSON, "member")]
    assert shown["balance_micros"] == TOPUP - expected and shown["usage"]["cost_micros"] == expected
    assert [(m["label"], m["requests"], m["cost_micros"]) for m in shown["usage_by_member"]] == [(PERSON, RPM + 1, expected)]
    assert not errors
