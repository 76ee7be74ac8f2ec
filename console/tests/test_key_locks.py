"""Limits an operator set on a key (with ``relaygate``) cannot be loosened by the
key's owner in the console: a quota raised or cleared, models or networks
widened, a disabled key enabled. Tightening them is allowed; the operator
clearing a limit frees it."""

from __future__ import annotations

import asyncio
import json

import pytest

from gateway_core.commands.cli import main

pytestmark = pytest.mark.usefixtures("users")


@pytest.fixture
def cli(seed, tmp_path, capsys):
    plugins = tmp_path / "every-plugin.toml"
    plugins.write_text("# every installed plugin\n")

    async def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = await asyncio.to_thread(main, [*argv, "--db", seed.config.db_path, "--plugins", str(plugins)])
        out, err = capsys.readouterr()
        return status, out, err

    return run


def key_row(seed, key_id: int) -> dict:
    return seed.rows("SELECT quota_micros, models, allow_ips, enabled, locks FROM api_keys WHERE id = ?", (key_id,))[0]


async def edit(browser, key_id: int, **fields) -> tuple[int, str]:
    form = {"name": "ci", "quota": "", "expires": "", "models": "", "allow_ips": "", **fields}
    return await browser.post(f"/console/keys/{key_id}/edit", form, csrf_from=f"/console/keys/{key_id}/edit")


async def test_the_owner_cannot_loosen_what_the_operator_set(gateway, seed, cli, browsers):
    assert (await cli("channel", "add", "other", "--type", "demo", "--base-url", "local://demo", "--models", "other"))[0] == 0
    status, out, _ = await cli("key", "create", "alice", "--name", "ci", "--quota", "2", "--models", "demo-chat,other",
                               "--allow-ip", "10.0.0.0/8", "--json")  # fmt: skip
    assert status == 0
    key_id = json.loads(out)["id"]
    assert json.loads(key_row(seed, key_id)["locks"]) == {"quota_micros": 2_000_000, "models": ["demo-chat", "other"], "allow_ips": ["10.0.0.0/8"]}
    alice = await browsers("alice")

    for loosened in ({"quota": "5", "models": "demo-chat", "allow_ips": "10.0.0.0/8"},   # a higher quota
                     {"quota": "", "models": "demo-chat", "allow_ips": "10.0.0.0/8"},    # no quota
                     {"quota": "1", "models": "", "allow_ips": "10.0.0.0/8"},            # every model
                     {"quota": "1", "models": "demo-chat,gpt-5", "allow_ips": "10.0.0.0/8"},
                     {"quota": "1", "models": "demo-chat", "allow_ips": "0.0.0.0/0"}):  # fmt: skip
        status, page = await edit(alice, key_id, **loosened)
        refusal = "no channel serves to the group &#39;default&#39;: gpt-5" if "gpt-5" in loosened["models"] else "set by the gateway&#39;s operator"
        assert status == 400 and refusal in page, loosened
    assert (key_row(seed, key_id)["quota_micros"], key_row(seed, key_id)["allow_ips"]) == (2_000_000, '["10.0.0.0/8"]')

    # tightening is the owner's to do
    status, _ = await edit(alice, key_id, quota="1.5", models="demo-chat", allow_ips="10.1.0.0/16")
    assert status == 200
    row = key_row(seed, key_id)
    assert (row["quota_micros"], json.loads(row["models"]), json.loads(row["allow_ips"])) == (1_500_000, ["demo-chat"], ["10.1.0.0/16"])
    # ... and back up to the operator's value, not beyond
    assert (await edit(alice, key_id, quota="2", models="demo-chat,other", allow_ips="10.0.0.0/8"))[0] == 200
    assert (await edit(alice, key_id, quota="2.01", models="demo-chat,other", allow_ips="10.0.0.0/8"))[0] == 400


async def test_a_key_the_operator_disabled_stays_disabled_until_the_operator_enables_it(gateway, seed, cli, browsers):
    status, out, _ = await cli("key", "create", "alice", "--name", "ci", "--json")
    key_id = json.loads(out)["id"]
    alice = await browsers("alice")
    assert (await cli("key", "disable", str(key_id)))[0] == 0
    status, page = await alice.post(f"/console/keys/{key_id}/enable", {}, csrf_from="/console/keys")
    assert status == 200 and "disabled by the gateway" in page
    assert key_row(seed, key_id)["enabled"] == 0
    # the owner's own disable and enable are theirs
    assert (await cli("key", "enable", str(key_id)))[0] == 0
    assert json.loads(key_row(seed, key_id)["locks"]) == {}
    await alice.post(f"/console/keys/{key_id}/disable", {}, csrf_from="/console/keys")
    assert key_row(seed, key_id)["enabled"] == 0
    await alice.post(f"/console/keys/{key_id}/enable", {}, csrf_from="/console/keys")
    assert key_row(seed, key_id)["enabled"] == 1


async def test_limits_the_owner_set_are_the_owners(gateway, seed, browsers):
    alice = await browsers("alice")
    status, _ = await alice.post("/console/keys/new", {"name": "mine", "group": "default", "quota": "3"}, csrf_from="/console/keys/new")
    assert status == 200
    key_id = seed.rows("SELECT id FROM api_keys WHERE name = 'mine'")[0]["id"]
    assert json.loads(key_row(seed, key_id)["locks"]) == {}
    assert (await edit(alice, key_id, name="mine", quota="9"))[0] == 200
    assert key_row(seed, key_id)["quota_micros"] == 9_000_000
