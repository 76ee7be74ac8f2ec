"""Teams in the console (docs/teams.md), over real HTTP against a running gateway: every
page and form of a team as each kind of person reaches it (a site admin, the team's
admin, a member, a viewer, another team's admin), a team admin's work with members
and keys, a removed member's key stopping at once, and the team's spend, tokens and
errors by member in the dashboard, the logs and their exports."""

from __future__ import annotations

import asyncio
import csv
import html
import io
import re

import openai
import pytest

from gateway_core.admin import Admin, team_keys, teams

from .conftest import PASSWORDS, set_password
from .test_console_pages import chat

OTHERS = {"carol": "carol-password-1", "dave": "dave-password-1"}


@pytest.fixture
def world(seed, users):
    """Team eng (alice its admin, bob a member, carol a viewer; 5 USD in its wallet, a
    service key) and team ops (dave its admin). Ids by name."""
    ids = dict(users)
    seed.price("demo-chat", 3_000_000, 15_000_000)
    for name, password in OTHERS.items():
        ids[name] = seed.user(name)
        set_password(seed, ids[name], password)
    PASSWORDS.update(OTHERS)

    async def build(port):
        admin = Admin(port)
        eng = await teams.create_team(admin, "eng")
        ops = await teams.create_team(admin, "ops")
        for name, role in (("alice", "admin"), ("bob", "member"), ("carol", "viewer")):
            await teams.set_member(admin, eng.id, ids[name], role)
        await teams.set_member(admin, ops.id, ids["dave"], "admin")
        await teams.topup_team(admin, eng.id, 5_000_000)
        service, _ = await team_keys.create_team_key(admin, eng.id, service=True, name="ci")
        return {**ids, "eng": eng.id, "ops": ops.id, "service": service.id}

    return seed._admin(build)


def form_action_ids(page: str, pattern: str) -> list[str]:
    return re.findall(pattern, page)


async def test_each_role_reaches_what_it_may_and_nothing_else(world, browsers):
    eng, ops = world["eng"], world["ops"]
    root = await browsers("root")
    status, page = await root.get("/console/teams")
    assert status == 200 and 'data-team="eng"' in page and 'data-team="ops"' in page and 'id="new-team"' in page
    status, page = await root.get(f"/console/teams/{eng}")
    assert status == 200 and f'action="/console/teams/{eng}/topup"' in page and 'id="balance">5.00<' in page

    alice = await browsers("alice")  # eng's admin
    status, page = await alice.get("/console/teams")
    assert status == 200 and 'data-team="eng"' in page and 'data-team="ops"' not in page and 'id="new-team"' not in page
    status, page = await alice.get(f"/console/teams/{eng}")
    assert status == 200 and 'id="add-member"' in page and "/topup" not in page and "/delete\"" not in page.split('id="members"')[0]
    site_only = {"/console/teams": {"name": "mine"}, f"/console/teams/{eng}/topup": {"amount": "100"},
                 f"/console/teams/{eng}/budgets": {"daily": ""}, f"/console/teams/{eng}/edit": {"name": "eng2", "groups": "default"},
                 f"/console/teams/{eng}/delete": {}}  # fmt: skip
    for path, form in site_only.items():
        status, page = await alice.post(path, form, csrf_from="/console/teams")
        assert status == 403 and "Only a site admin may" in page, (path, page[:300])
    # another team is not found, whatever the page or form
    for path in (f"/console/teams/{ops}", f"/console/dashboard?team={ops}", f"/console/logs?team={ops}",
                 f"/console/logs/export.csv?team={ops}", "/console/teams/999999"):  # fmt: skip
        status, page = await alice.get(path)
        assert status == 404 and "ops" not in page.split("<main")[1], path
    for path in (f"/console/teams/{ops}/members", f"/console/teams/{ops}/keys", f"/console/teams/{ops}/members/{world['dave']}/remove"):
        status, page = await alice.post(path, {"name": "bob", "role": "member"}, csrf_from="/console/teams")
        assert status == 404, path
    for path in ("/console/admin/users", "/console/admin/logs", f"/console/admin/logs?team={eng}"):
        status, _ = await alice.get(path)
        assert status == 403, path

    carol = await browsers("carol")  # eng's viewer: reads, never writes
    status, page = await carol.get(f"/console/teams/{eng}")
    assert status == 200 and 'id="by-member"' in page and 'id="new-team-key"' not in page and 'id="add-member"' not in page
    for path, form in ((f"/console/teams/{eng}/keys", {"name": "mine"}), (f"/console/teams/{eng}/members", {"name": "dave", "role": "member"}),
                       (f"/console/teams/{eng}/members/{world['bob']}/role", {"role": "admin"})):  # fmt: skip
        status, page = await carol.post(path, form, csrf_from="/console/teams")
        assert status == 403 and "you are a viewer of team 'eng'" in html.unescape(page), (path, page[:300])
    status, _ = await carol.post(f"/console/teams/{eng}/keys/{world['service']}/delete", {}, csrf_from="/console/teams")
    assert status == 403

    bob = await browsers("bob")  # a member: their own keys, not the team's
    status, page = await bob.post(f"/console/teams/{eng}/keys", {"name": "svc", "service": "on"}, csrf_from="/console/teams")
    assert status == 403 and "service keys" in page
    status, page = await bob.post(f"/console/teams/{eng}/keys/{world['service']}/delete", {}, csrf_from="/console/teams")
    assert status == 404  # not his: not found, as in the API


async def test_a_team_admin_runs_the_team_and_a_removed_members_key_stops_at_once(world, browsers, gateway):
    eng = world["eng"]
    alice, bob, root = await browsers("alice"), await browsers("bob"), await browsers("root")
    status, page = await alice.post(f"/console/teams/{eng}/members", {"name": "dave", "role": "viewer"}, csrf_from="/console/teams")
    assert status == 200 and 'data-member="dave"' in page
    status, page = await alice.post(f"/console/teams/{eng}/members", {"name": "nobody", "role": "member"}, csrf_from="/console/teams")
    assert status == 400 and "no user named 'nobody'" in html.unescape(page)
    # bob makes his own key, paid by the team; the secret is shown once
    status, page = await bob.post(f"/console/teams/{eng}/keys", {"name": "laptop"}, csrf_from="/console/teams")
    secret = re.search(r'<code id="secret">([^<]+)</code>', page).group(1)
    assert status == 200 and f'href="/console/teams/{eng}"' in page
    _, page = await bob.get(f"/console/teams/{eng}")
    key_id = int(re.findall(r'data-key-id="(\d+)"', page)[0])
    assert re.findall(r'data-key-id="(\d+)"', page) == [str(key_id)], "a member sees their own keys only"
    # a site admin's cap binds the team: its admin may tighten it, never loosen it
    budgets = f"/console/teams/{eng}/keys/{key_id}/budgets"
    status, _ = await root.post(budgets, {"daily": "1.00"}, csrf_from="/console/teams", allow_redirects=False)
    assert status == 303
    status, page = await alice.post(budgets, {"daily": "5.00"}, csrf_from="/console/teams")
    assert status == 400 and "was set by the gateway's operator; you may tighten it but not loosen" in html.unescape(page), page[:500]
    status, _ = await alice.post(budgets, {"daily": "0.50"}, csrf_from="/console/teams", allow_redirects=False)
    assert status == 303
    chat(gateway, secret)  # works, paid by the team
    for _ in range(50):  # settled after the answer
        _, page = await root.get(f"/console/teams/{eng}")
        if not re.search(r'id="balance">5\.00<', page):
            break
        await asyncio.sleep(0.1)
    assert re.search(r'id="balance">4\.99\d*<', page), "the team's wallet paid"
    status, _ = await alice.post(f"/console/teams/{eng}/members/{world['bob']}/remove", {}, csrf_from="/console/teams", allow_redirects=False)
    assert status == 303
    with pytest.raises(openai.AuthenticationError):
        chat(gateway, secret)


async def test_spend_tokens_and_errors_by_team_and_member_in_every_front(world, browsers, gateway, seed):
    eng = world["eng"]
    bob = await browsers("bob")
    status, page = await bob.post(f"/console/teams/{eng}/keys", {"name": "laptop"}, csrf_from="/console/teams")
    request_id = chat(gateway, re.search(r'<code id="secret">([^<]+)</code>', page).group(1))
    solo_key, solo_secret = seed.key(world["alice"], name="own")
    chat(gateway, solo_secret)  # alice's own request: not the team's

    carol = await browsers("carol")  # the viewer reads the team's usage, by member
    status, page = await carol.get(f"/console/teams/{eng}")
    assert status == 200 and re.search(r'id="by-member".*?<th scope="row" class="name">bob</th><td class="num">1</td>', page, re.S)
    status, page = await carol.get(f"/console/dashboard?team={eng}&range=24h")
    assert status == 200 and 'id="by-member"' in page and re.search(r'id="stat-requests">1<', page)
    assert re.search(r'id="by-member".*?>bob</th><td class="num">1</td>', page, re.S)
    status, page = await carol.get(f"/console/logs?team={eng}")
    assert status == 200 and request_id in page and f"?team={eng}" in page
    log_id = re.search(rf'href="/console/logs/(\d+)\?team={eng}"', page).group(1)
    assert (await carol.get(f"/console/logs/{log_id}?team={eng}"))[0] == 200
    assert (await carol.get(f"/console/logs/{log_id}"))[0] == 404, "not her own row without the team"
    status, text = await carol.get(f"/console/logs/export.csv?team={eng}")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert status == 200 and [row["request_id"] for row in rows] == [request_id] and "channel_name" not in rows[0]

    root = await browsers("root")  # the operator filters everyone's log by team, in the page and the export
    status, page = await root.get(f"/console/admin/logs?team={eng}")
    assert status == 200 and request_id in page and "own" not in re.findall(r'<td>([^<]*)</td>', page)
    status, text = await root.get(f"/console/admin/logs/export.jsonl?team={eng}")
    assert status == 200 and len(text.splitlines()) == 1 and f'"team_id":{eng}' in text
    status, page = await root.get(f"/console/dashboard?team={eng}")
    assert status == 200 and "channel-health" not in page and re.search(r'id="stat-requests">1<', page)


async def test_team_pages_in_chinese(world, browsers):
    """Every team page in the Chinese catalogue's words, for each role that sees it."""
    eng = world["eng"]
    pages = ["/console/teams", f"/console/teams/{eng}", f"/console/dashboard?team={eng}", f"/console/logs?team={eng}"]
    for name in ("root", "alice", "bob", "carol"):
        browser = await browsers(name)
        for path in pages:
            if name == "root" and path.startswith("/console/logs"):
                path = path.replace("/console/logs", "/console/admin/logs")
            status, page = await browser.get(path, headers={"Accept-Language": "zh-CN"})
            assert status == 200 and '<html lang="zh-Hans">' in page, (name, path)
            title = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
            assert re.search(r"[\u4e00-\u9fff]", title.split("·")[0]), (name, path, title)
            assert not re.search(r"%\([a-z_]+\)s|\{\{|\{%", page), (name, path)
    _, page = await browser.get(f"/console/teams/{eng}", headers={"Accept-Language": "zh-CN"})
    assert "（你：查看者）" in page and "按成员的花费，最近 30 天" in page
