"""A team's rate limits set by a site admin, and a team key's name, models and
networks edited by whoever may, in the console over real HTTP (docs/teams.md): the
admin layer's rules and messages, the same as the command line's and the management API's."""

from __future__ import annotations

import asyncio
import html
import re

import aiohttp
import pytest

from gateway_core.admin import Admin, audit, team_keys, tokens
from gateway_core.admin.errors import Invalid
from gateway_core.admin.rules import check_rate_limit
from gateway_core.commands.cli import main

from .test_teams import world  # noqa: F401 (team eng: alice its admin, bob a member, carol a viewer; ops: dave)


async def test_a_site_admin_sets_a_teams_rate_limits_in_the_console(world, browsers, seed):
    eng, limits = world["eng"], f"/console/teams/{world['eng']}/limits"
    root = await browsers("root")
    status, page = await root.get(f"/console/teams/{eng}")
    assert status == 200 and f'action="{limits}"' in page
    status, _ = await root.post(limits, {"rpm": "600", "tpm": "", "concurrency": "0"}, csrf_from="/console/teams", allow_redirects=False)
    assert status == 303
    _, page = await root.get(f"/console/teams/{eng}")
    shown = re.search(r'id="team-rate-limits">(.*?)</dd>', page, re.S).group(1)
    assert "600" in shown and 'name="rpm" inputmode="numeric" size="8" value="600"' in page

    async def stored(port):
        return await port.get_user_limits((await port.find_team("eng")).account_id)

    after = seed._admin(stored)
    assert (after["rpm"], after["tpm"], after["concurrency"]) == (600, None, 0)
    for form, message in (
        ({"rpm": "lots"}, "rpm must be a whole number from 0 (unlimited) to 2147483648, got 'lots'"),
        ({"tpm": "-5"}, "tpm must be a whole number from 0 (unlimited) to 2147483648, got -5"),
        ({"concurrency": str(2**40)}, "concurrency must be a whole number from 0 (unlimited)"),
    ):
        status, page = await root.post(limits, form, csrf_from="/console/teams")
        assert status == 400 and message in html.unescape(page), (form, page[:300])
    assert seed._admin(stored)["rpm"] == 600  # nothing changed by a refused form

    alice, carol = await browsers("alice"), await browsers("carol")
    _, page = await alice.get(f"/console/teams/{eng}")
    assert 'id="team-limits"' not in page and 'id="team-rate-limits"' in page  # the team's admin reads them only
    for browser in (alice, carol):
        status, page = await browser.post(limits, {"rpm": "100000"}, csrf_from="/console/teams")
        assert status == 403 and "Only a site admin may change a team&#39;s name, groups, rate limits or budgets" in page
    dave = await browsers("dave")
    status, _ = await dave.post(limits, {"rpm": "1"}, csrf_from="/console/teams")
    assert status == 404
    assert seed._admin(stored)["rpm"] == 600


async def test_a_team_key_is_edited_within_what_the_site_set(world, browsers, seed):
    eng, service = world["eng"], world["service"]
    bob, alice, carol, dave, root = [await browsers(name) for name in ("bob", "alice", "carol", "dave", "root")]
    status, page = await bob.post(f"/console/teams/{eng}/keys", {"name": "laptop"}, csrf_from="/console/teams")
    assert status == 200
    _, page = await bob.get(f"/console/teams/{eng}")
    own = int(re.findall(r'data-key-id="(\d+)"', page)[0])
    assert f'action="/console/teams/{eng}/keys/{own}/edit"' in page

    def edit(key_id: int) -> str:
        return f"/console/teams/{eng}/keys/{key_id}/edit"

    status, _ = await bob.post(edit(own), {"name": "desk", "models": "", "allow_ips": "192.0.2.7"}, csrf_from="/console/teams", allow_redirects=False)
    assert status == 303
    status, page = await bob.post(edit(own), {"name": "desk", "allow_ips": "not-a-network"}, csrf_from="/console/teams")
    assert status == 400 and "not-a-network" in html.unescape(page)
    status, page = await bob.post(edit(own), {"name": "desk", "models": "no-such-model"}, csrf_from="/console/teams")
    assert status == 400 and "no-such-model" in html.unescape(page)
    assert (await bob.post(edit(service), {"name": "mine"}, csrf_from="/console/teams"))[0] == 404  # the team's, not his
    status, page = await carol.post(edit(own), {"name": "x"}, csrf_from="/console/teams")
    assert status == 403 and "you are a viewer of team &#39;eng&#39;" in page
    assert (await dave.post(edit(own), {"name": "x"}, csrf_from="/console/teams"))[0] == 404  # another team's admin

    status, _ = await root.post(edit(own), {"name": "desk", "allow_ips": "10.0.0.0/8", "models": "demo-chat"}, csrf_from="/console/teams", allow_redirects=False)
    assert status == 303  # the site's networks and models: locked against the team
    for browser in (alice, bob):
        status, page = await browser.post(edit(own), {"name": "desk", "allow_ips": "", "models": "demo-chat"}, csrf_from="/console/teams")
        assert status == 400 and "allowed networks of this key was set by the gateway&#39;s operator" in page, page[:400]
        status, page = await browser.post(edit(own), {"name": "desk", "allow_ips": "10.0.0.0/8", "models": ""}, csrf_from="/console/teams")
        assert status == 400 and "allowed models of this key was set by the gateway&#39;s operator" in page
    status, _ = await alice.post(edit(own), {"name": "bobs-desk", "allow_ips": "10.1.0.0/16", "models": "demo-chat"}, csrf_from="/console/teams", allow_redirects=False)
    assert status == 303
    status, _ = await alice.post(edit(service), {"name": "deploy"}, csrf_from="/console/teams", allow_redirects=False)
    assert status == 303

    async def keys(port):
        admin = Admin(port)
        listed = {key.id: key for key in await team_keys.list_team_keys(admin, eng)}
        return listed, [e.action for e in await audit.list_entries(admin) if e.action == "team.key.update"]

    listed, actions = seed._admin(keys)
    assert (listed[own].name, listed[own].allow_ips, listed[own].models) == ("bobs-desk", ("10.1.0.0/16",), ("demo-chat",))
    assert listed[service].name == "deploy" and len(actions) == 4


@pytest.mark.parametrize("column, typed, sent", [("rpm", "-1", -1), ("tpm", "lots", "lots"), ("concurrency", str(2**40), 2**40)])
async def test_a_teams_wrong_rate_limit_has_one_message_in_the_cli_the_console_and_the_api(
    world, browsers, gateway, seed, tmp_path, capsys, column, typed, sent,
):  # fmt: skip
    """The admin layer's words (:func:`check_rate_limit`) in every front, each naming the field its own way."""
    eng = world["eng"]
    with pytest.raises(Invalid) as rule:
        check_rate_limit(sent, column)
    words = rule.value.detail  # "must be a whole number from 0 (unlimited) to ..., got ..."

    plugins = tmp_path / "every-plugin.toml"
    plugins.write_text("# every installed plugin\n")
    capsys.readouterr()
    status = await asyncio.to_thread(main, ["team", "edit", "eng", f"--{column}", typed, "--db", seed.config.db_path, "--plugins", str(plugins)])
    _, err = capsys.readouterr()
    assert status == 2 and err == f"relaygate team edit: --{column} {words}\n", err

    root = await browsers("root")
    status, page = await root.post(f"/console/teams/{eng}/limits", {column: typed}, csrf_from="/console/teams")
    shown = re.search(r'<p class="error" role="alert">([^<]*)</p>', page)
    assert status == 400 and shown is not None and html.unescape(shown.group(1)) == f"{column} {words}", page[:500]

    async def admin_token(port):
        return (await tokens.create_token(Admin(port), world["root"], scope="admin", name="limits"))[1]

    secret = seed._admin(admin_token)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {secret}"}) as http:
        async with http.patch(f"{gateway.url}/api/v1/teams/{eng}", json={column: sent}) as answer:
            error = (await answer.json())["error"]
    assert answer.status == 400 and (error["message"], error["field"]) == (f"{column} {words}", column), error

    async def stored(port):
        return await port.get_user_limits((await port.find_team("eng")).account_id)

    assert seed._admin(stored)[column] is None  # refused everywhere: nothing changed
