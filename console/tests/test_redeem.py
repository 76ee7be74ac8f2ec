"""Redeeming a code in the console's wallet page: the balance is credited once, a
wrong or used code is said so on the page, and wrong guesses are throttled."""

from __future__ import annotations

import asyncio
import json

import pytest

from gateway_core.commands.cli import main

pytestmark = pytest.mark.usefixtures("users")


@pytest.fixture
def codes(seed, tmp_path, capsys):
    plugins = tmp_path / "every-plugin.toml"
    plugins.write_text("# every installed plugin\n")

    async def create(count: int, value: str) -> list[str]:
        capsys.readouterr()
        argv = ["code", "create", "--count", str(count), "--value", value, "--json", "--db", seed.config.db_path, "--plugins", str(plugins)]
        assert await asyncio.to_thread(main, argv) == 0
        return [item["code"] for item in json.loads(capsys.readouterr().out)]

    return create


async def test_a_user_redeems_a_code_once_in_the_wallet_page(gateway, seed, browsers, codes, users):
    [code] = await codes(1, "3.25")
    alice = await browsers("alice")
    status, page = await alice.post("/console/wallet/redeem", {"code": code}, csrf_from="/console/wallet")
    assert status == 200 and "Code redeemed" in page and "13.25" in page  # 10 USD before
    status, page = await alice.post("/console/wallet/redeem", {"code": code}, csrf_from="/console/wallet")
    assert status == 400 and "already been redeemed" in page
    bob = await browsers("bob")
    status, page = await bob.post("/console/wallet/redeem", {"code": code}, csrf_from="/console/wallet")
    assert status == 400 and "already been redeemed" in page
    rows = seed.rows("SELECT user_id, kind, amount_micros FROM ledger WHERE kind = 'redemption'")
    assert rows == [{"user_id": users["alice"], "kind": "redemption", "amount_micros": 3_250_000}]


async def test_wrong_codes_are_throttled(gateway, browsers, codes):
    [code] = await codes(1, "1")
    bob = await browsers("bob")
    for _ in range(5):
        status, page = await bob.post("/console/wallet/redeem", {"code": "RG-AAAA-BBBB-CCCC-DDDD"}, csrf_from="/console/wallet")
        assert status == 400 and "does not exist" in page
    status, page = await bob.post("/console/wallet/redeem", {"code": code}, csrf_from="/console/wallet")
    assert status == 429 and "Too many wrong codes" in page
