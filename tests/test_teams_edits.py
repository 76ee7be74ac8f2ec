"""A team key's name, models and networks, and a team's rate limits, in the admin
layer on SQLite and PostgreSQL (docs/teams.md): who may, what the site set and the
team may only narrow, and the messages every front shows."""

from __future__ import annotations

import pytest

from gateway_core.admin import Forbidden, Invalid, Locked, NotFound
from gateway_core.admin import team_keys, teams
from gateway_core.admin.rules import parse_rate_limit
from tests.test_teams import As, admin, registry, store, world  # noqa: F401 (the fixtures, on both stores)


async def test_a_team_key_is_edited_by_its_member_or_the_teams_admins(admin, world):
    eng, ops, callers = world
    own, _ = await team_keys.create_team_key(admin, eng.id, caller=callers["dev"], name="laptop")
    service, _ = await team_keys.create_team_key(admin, eng.id, service=True, name="ci")
    edited = await team_keys.update_team_key(admin, eng.id, own.id, name="desk", allow_ips=["192.0.2.7"], caller=callers["dev"])
    assert (edited.name, edited.allow_ips, edited.models) == ("desk", ("192.0.2.7/32",), ())
    renamed = await team_keys.update_team_key(admin, eng.id, service.id, name="deploy", caller=callers["lead"])
    assert renamed.name == "deploy" and renamed.member_id is None
    with pytest.raises(NotFound):
        await team_keys.update_team_key(admin, eng.id, service.id, name="x", caller=callers["dev"])  # not theirs
    with pytest.raises(Forbidden, match="you are a viewer of team 'eng'"):
        await team_keys.update_team_key(admin, eng.id, own.id, name="x", caller=callers["watcher"])
    for outsider in ("other", "outsider"):
        with pytest.raises(NotFound, match=f"no team with id {eng.id}"):
            await team_keys.update_team_key(admin, eng.id, own.id, name="x", caller=callers[outsider])
    with pytest.raises(NotFound):
        await team_keys.update_team_key(admin, ops.id, own.id, name="x")  # a key of another team
    with pytest.raises(Invalid, match="name must not be empty"):
        await team_keys.update_team_key(admin, eng.id, own.id, name=" ", caller=callers["dev"])

    await team_keys.update_team_key(admin, eng.id, own.id, allow_ips=["10.0.0.0/8"], caller=callers["root"])  # the site's: locked
    for caller in ("lead", "dev"):
        for wider in ([], ["0.0.0.0/0"]):
            with pytest.raises(Locked, match="allowed networks of this key was set by the gateway's operator"):
                await team_keys.update_team_key(admin, eng.id, own.id, allow_ips=wider, caller=callers[caller])
    narrowed = await team_keys.update_team_key(admin, eng.id, own.id, allow_ips=["10.1.0.0/16"], caller=callers["dev"])
    assert narrowed.allow_ips == ("10.1.0.0/16",) and narrowed.name == "desk"  # what was not given is kept
    widened = await team_keys.update_team_key(admin, eng.id, own.id, allow_ips=[], caller=None)  # the site lifts its own lock
    assert widened.allow_ips == ()


async def test_a_teams_rate_limits_are_checked_in_the_admin_layer(admin, world):
    eng, _, callers = world
    view = await teams.edit_team(admin, eng.id, limits={"rpm": 60, "tpm": 0, "concurrency": None}, caller=callers["root"])
    assert (view.limits["rpm"], view.limits["tpm"], view.limits["concurrency"]) == (60, 0, None)
    for limits, message in (
        ({"rpm": -1}, "rpm must be a whole number from 0 (unlimited) to 2147483648, got -1"),
        ({"tpm": 2**40}, "tpm must be a whole number from 0 (unlimited)"),
        ({"concurrency": True}, "concurrency must be a whole number"),
        ({"daily_budget_micros": -5}, "daily budget micros must not be negative"),
        ({"quota": 5}, "quota is not a team's limit"),
    ):
        with pytest.raises(Invalid, match=message.replace("(", r"\(").replace(")", r"\)")):
            await teams.edit_team(admin, eng.id, limits=limits)
    assert parse_rate_limit(" 30 ", "rpm") == 30 and parse_rate_limit("", "rpm") is None
    with pytest.raises(Invalid, match="rpm must be a whole number from 0 \\(unlimited\\) to 2147483648, got 'lots'"):
        parse_rate_limit("lots", "rpm")
    with pytest.raises(Forbidden, match="Only a site admin may"):
        await teams.edit_team(admin, eng.id, limits={"rpm": 1000}, caller=callers["lead"])
    assert (await teams.team_view(admin, eng.id)).limits["rpm"] == 60
