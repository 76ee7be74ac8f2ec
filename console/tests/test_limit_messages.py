"""One rule and one message per limit on every front: a wrong rate limit of a group or
of a key, or a wrong budget of a user or a key, is refused by the command line, the
console and the management API with the admin layer's words
(:mod:`gateway_core.admin.rules`), each front naming the field its own way (``--rpm``,
``rpm``; ``--daily-usd``, ``daily``); an empty value clears the limit. So is a group's
wrong price ratio (:func:`gateway_core.admin.groups.parse_ratio`), and a channel's wrong
priority, weight or concurrency cap (:func:`gateway_core.admin.rules.check_channel_number`)."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from gateway_core.admin import Admin, Invalid, groups, tokens
from gateway_core.admin.rules import budget_micros, check_channel_number, check_rate_limit
from gateway_core.commands.cli import main

ERROR = re.compile(r'<p class="error" role="alert">([^<]*)</p>')
# typed on a command line or in a form, and sent in the API's JSON: what every front refuses
WRONG = [("rpm", "-1", -1), ("tpm", "lots", "lots"), ("concurrency", str(2**40), 2**40), ("rpm", "1.5", "1.5")]


# budgets typed, and sent as the API's decimal strings: negative, not a number, over a billion USD, finer than a micro-USD
WRONG_USD = ["-1", "lots", str(2**40), "1.1234567"]


def the_rule(column: str, sent: object, rule: Callable[[Any, str], object] = check_rate_limit) -> str:
    """What the admin layer says of ``sent`` for ``column`` (without the field's name)."""
    with pytest.raises(Invalid) as refused:
        rule(sent, column)
    return refused.value.detail  # "must be a whole number from 0 (unlimited) to ..., got ..."


async def cli(seed, tmp_path, capsys, *argv: str) -> tuple[int, str]:
    """Run ``relaygate`` on the seeded database with every installed plugin: its status and stderr."""
    plugins = tmp_path / "every-plugin.toml"
    plugins.write_text("# every installed plugin\n")
    capsys.readouterr()
    status = await asyncio.to_thread(main, [*argv, "--db", seed.config.db_path, "--plugins", str(plugins)])
    return status, capsys.readouterr().err


def console_error(page: str) -> str | None:
    shown = ERROR.search(page)
    return html.unescape(shown.group(1)) if shown else None


async def api(gateway, seed, user_id: int, scope: str, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async def token(port):
        return (await tokens.create_token(Admin(port), user_id, scope=scope, name="limits"))[1]

    secret = seed._admin(token)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {secret}"}) as http:
        async with http.request(method, f"{gateway.url}/api/v1{path}", json=body) as answer:
            return answer.status, await answer.json(content_type=None)


def stored(seed, read: Callable[[Any], Awaitable[Any]]) -> Any:
    return seed._admin(read)


@pytest.mark.parametrize("column, typed, sent", WRONG)
async def test_a_groups_wrong_rate_limit_has_one_message_in_the_cli_the_console_and_the_api(
    users, browsers, gateway, seed, tmp_path, capsys, column, typed, sent,
):  # fmt: skip
    seed.group("staff", rpm=60, tpm=6000, concurrency=3)
    words = the_rule(column, sent)

    status, err = await cli(seed, tmp_path, capsys, "group", "set", "staff", f"--{column}", typed)
    assert status == 2 and err == f"relaygate group set: --{column} {words}\n", err

    root = await browsers("root")
    status, page = await root.post("/console/admin/groups", {"name": "staff", "ratio": "1", column: typed}, csrf_from="/console/admin/groups")
    assert status == 400 and console_error(page) == f"{column} {words}", page[:800]

    status, answer = await api(gateway, seed, users["root"], "admin", "PUT", "/groups/staff", {column: sent})
    error = answer["error"]
    assert status == 400 and (error["message"], error["field"]) == (f"{column} {words}", column), answer

    async def group(port):
        return next(group for group in await port.list_groups() if group.name == "staff")

    kept = stored(seed, group)
    assert (kept.rpm, kept.tpm, kept.concurrency) == (60, 6000, 3)  # refused everywhere: nothing changed


@pytest.mark.parametrize("column, typed, sent", WRONG)
async def test_a_keys_wrong_rate_limit_has_one_message_in_the_cli_the_console_and_the_api(
    users, browsers, gateway, seed, tmp_path, capsys, column, typed, sent,
):  # fmt: skip
    key_id, _ = seed.key(users["bob"], name="laptop")
    seed.key_limits(key_id, rpm=30)
    words = the_rule(column, sent)

    status, err = await cli(seed, tmp_path, capsys, "key", "limits", str(key_id), f"--{column}", typed)
    assert status == 2 and err == f"relaygate key limits: --{column} {words}\n", err
    status, err = await cli(seed, tmp_path, capsys, "key", "create", "bob", f"--{column}", typed)
    assert status == 2 and err == f"relaygate key create: --{column} {words}\n", err

    bob = await browsers("bob")  # the owner's form
    form = {"name": "laptop", "rpm": "30", column: typed}
    status, page = await bob.post(f"/console/keys/{key_id}/edit", form, csrf_from=f"/console/keys/{key_id}/edit")
    assert status == 400 and console_error(page) == f"{column} {words}", page[:800]
    status, page = await bob.post("/console/keys/new", {"name": "another", column: typed}, csrf_from="/console/keys/new")
    assert status == 400 and console_error(page) == f"{column} {words}", page[:800]

    for scope, method, path in (("write", "PATCH", f"/keys/{key_id}"), ("write", "POST", "/keys"), ("admin", "PATCH", f"/users/{users['bob']}/keys/{key_id}")):
        status, answer = await api(gateway, seed, users["bob" if scope == "write" else "root"], scope, method, path, {column: sent})
        error = answer["error"]
        assert status == 400 and (error["message"], error["field"]) == (f"{column} {words}", column), (path, answer)

    async def keys(port):
        return await port.list_keys(users["bob"])

    listed = stored(seed, keys)
    limits = listed[0].limits
    assert len(listed) == 1 and (limits.requests_per_minute, limits.tokens_per_minute, limits.concurrency) == (30, 0, 0)  # refused everywhere


async def test_an_empty_rate_limit_clears_it_on_every_front(users, browsers, gateway, seed, tmp_path, capsys):
    """'' on the command line and in the form, null in the API: no limit of its own."""
    seed.group("staff", rpm=60)

    async def group_rpm(port):
        return next(group.rpm for group in await port.list_groups() if group.name == "staff")

    status, _ = await cli(seed, tmp_path, capsys, "group", "set", "staff", "--rpm", "")
    assert status == 0 and stored(seed, group_rpm) is None
    seed.group("staff", rpm=60)
    root = await browsers("root")
    status, _ = await root.post("/console/admin/groups", {"name": "staff", "ratio": "1", "rpm": ""}, csrf_from="/console/admin/groups")
    assert status == 200 and stored(seed, group_rpm) is None
    seed.group("staff", rpm=60)
    status, answer = await api(gateway, seed, users["root"], "admin", "PUT", "/groups/staff", {"rpm": None})
    assert status == 200 and answer["rpm"] is None and stored(seed, group_rpm) is None


@pytest.mark.parametrize("typed", WRONG_USD)
async def test_a_wrong_budget_has_one_message_in_the_cli_the_console_and_the_api(users, browsers, gateway, seed, tmp_path, capsys, typed):
    """A user's and an operator's key budgets: the same words (:func:`budget_micros`) everywhere."""
    bob = users["bob"]
    key_id, _ = seed.key(bob, name="laptop")
    words = the_rule("daily", typed, budget_micros)

    for argv in (("user", "limits", "bob"), ("key", "limits", str(key_id))):
        status, err = await cli(seed, tmp_path, capsys, *argv, "--daily-usd", typed)
        assert status == 2 and err == f"relaygate {argv[0]} limits: --daily-usd {words}\n", err

    root = await browsers("root")
    for path in (f"/console/admin/users/{bob}/budgets", f"/console/admin/users/{bob}/keys/{key_id}/budgets"):
        status, page = await root.post(path, {"daily": typed, "weekly": "", "monthly": ""}, csrf_from=f"/console/admin/users/{bob}")
        assert status == 400 and console_error(page) == f"daily {words}", (path, page[:800])

    for path in (f"/users/{bob}/budgets", f"/keys/{key_id}/budgets"):
        status, answer = await api(gateway, seed, users["root"], "admin", "PATCH", path, {"daily": typed})
        error = answer["error"]
        assert status == 400 and (error["message"], error["field"]) == (f"daily {words}", "daily"), (path, answer)

    async def budgets(port):
        return (await port.get_user_limits(bob))["daily_budget_micros"], (await port.list_keys(bob))[0].budgets.daily

    assert stored(seed, budgets) == (None, None)  # refused everywhere: nothing changed


@pytest.mark.parametrize("typed", WRONG_USD)
async def test_a_keys_wrong_quota_has_one_message_in_the_cli_the_console_and_the_api(users, browsers, gateway, seed, tmp_path, capsys, typed):
    """A key's quota is an amount of USD as a budget is: the same rule (:func:`budget_micros`) and words."""
    bob = users["bob"]
    key_id, _ = seed.key(bob, name="laptop")
    words = the_rule("quota", typed, budget_micros)

    for argv in (("key", "create", "bob"), ("key", "edit", str(key_id))):
        status, err = await cli(seed, tmp_path, capsys, *argv, "--quota", typed)
        assert status == 2 and err == f"relaygate {' '.join(argv[:2])}: --quota {words}\n", err

    browser = await browsers("bob")
    for path in ("/console/keys/new", f"/console/keys/{key_id}/edit"):
        status, page = await browser.post(path, {"name": "laptop", "quota": typed}, csrf_from=path)
        assert status == 400 and console_error(page) == f"quota {words}", (path, page[:800])

    for method, path in (("POST", "/keys"), ("PATCH", f"/keys/{key_id}")):
        status, answer = await api(gateway, seed, bob, "write", method, path, {"quota": typed})
        error = answer["error"]
        assert status == 400 and (error["message"], error["field"]) == (f"quota {words}", "quota"), (path, answer)

    async def keys(port):
        return [(key.name, key.quota_micros) for key in await port.list_keys(bob)]

    assert stored(seed, keys) == [("laptop", None)]  # refused everywhere: nothing changed


@pytest.mark.parametrize("typed", ["-1", "lots", str(2**40), "0.1234567", ""])
async def test_a_groups_wrong_price_ratio_has_one_message_in_the_cli_the_console_and_the_api(users, browsers, gateway, seed, tmp_path, capsys, typed):
    seed.group("staff", ratio_ppm=800_000)
    words = the_rule("ratio", typed, lambda text, _: groups.parse_ratio(text))

    status, err = await cli(seed, tmp_path, capsys, "group", "set", "staff", "--ratio", typed)
    assert status == 2 and err == f"relaygate group set: --ratio {words}\n", err

    if typed:  # an empty ratio in the console's form is 1, list prices
        root = await browsers("root")
        status, page = await root.post("/console/admin/groups", {"name": "staff", "ratio": typed}, csrf_from="/console/admin/groups")
        assert status == 400 and console_error(page) == f"ratio {words}", page[:800]

    status, answer = await api(gateway, seed, users["root"], "admin", "PUT", "/groups/staff", {"ratio": typed})
    error = answer["error"]
    assert status == 400 and (error["message"], error["field"]) == (f"ratio {words}", "ratio"), answer

    async def ratio(port):
        return next(group.ratio_ppm for group in await port.list_groups() if group.name == "staff")

    assert stored(seed, ratio) == 800_000  # refused everywhere: nothing changed


@pytest.mark.parametrize("column, typed, sent", [("concurrency", "-1", -1), ("weight", "lots", "lots"), ("priority", str(2**40), 2**40), ("weight", "1.5", "1.5")])
async def test_a_channels_wrong_number_has_one_message_in_the_cli_the_console_and_the_api(
    users, browsers, gateway, seed, tmp_path, capsys, column, typed, sent,
):  # fmt: skip
    channel_id = seed.channel("spare", type="demo", base_url="local://demo", models=["demo-chat"], weight=3, concurrency=2)
    words = the_rule(column, sent, check_channel_number)

    status, err = await cli(seed, tmp_path, capsys, "channel", "edit", "spare", f"--{column}", typed)
    assert status == 2 and err == f"relaygate channel edit: --{column} {words}\n", err

    root = await browsers("root")
    form = {"name": "spare", "type": "demo", "base_url": "local://demo", "models": "demo-chat", "groups": "default", column: typed}
    status, page = await root.post(f"/console/admin/channels/{channel_id}/edit", form, csrf_from=f"/console/admin/channels/{channel_id}/edit")
    assert status == 400 and console_error(page) == f"{column} {words}", page[:800]

    status, answer = await api(gateway, seed, users["root"], "admin", "PATCH", f"/channels/{channel_id}", {column: sent})
    error = answer["error"]
    assert status == 400 and (error["message"], error["field"]) == (f"{column} {words}", column), answer

    async def channel(port):
        return next(channel for channel in await port.list_channels() if channel.id == channel_id)

    kept = stored(seed, channel)
    assert (kept.priority, kept.weight, kept.concurrency) == (0, 3, 2)  # refused everywhere: nothing changed
