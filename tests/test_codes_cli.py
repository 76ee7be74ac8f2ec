"""``relaygate code create|list|disable`` and ``relaygate wallet redeem``: the exact
output scripts read, and exit 1 with one line for a code that cannot be redeemed."""

from __future__ import annotations

import csv
import io
import json

from gateway_core.billing import testing as kit
from gateway_core.commands.cli import main


def run(capsys, seed, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main([*argv, "--db", seed.config.db_path])
    out, err = capsys.readouterr()
    return status, out, err


def test_codes_from_creation_to_redemption(seed, capsys):
    user_id = seed.user("bob")
    status, out, _ = run(capsys, seed, "code", "create", "--count", "3", "--value", "1.50", "--note", "spring", "--json")
    created = json.loads(out)
    assert status == 0 and [sorted(item) for item in created] == [["code", "id"]] * 3
    status, out, _ = run(capsys, seed, "code", "create", "--count", "2", "--value", "1")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0 and len(rows) == 2 and all(row["code"].startswith("RG-") for row in rows)

    status, out, _ = run(capsys, seed, "wallet", "redeem", "bob", created[0]["code"])
    assert status == 0 and "Credited 1.50 USD to 'bob'" in out
    assert kit.balance_of(seed, user_id) == 1_500_000
    run(capsys, seed, "code", "disable", str(created[1]["id"]))
    for code, says in ((created[0]["code"], "already been redeemed"), (created[1]["code"], "disabled"), ("RG-XXXX", "does not exist")):
        status, out, err = run(capsys, seed, "wallet", "redeem", "bob", code)
        assert (status, out) == (1, "") and len(err.strip().splitlines()) == 1 and says in err
    status, out, _ = run(capsys, seed, "code", "list", "--json")
    states = {item["id"]: item["state"] for item in json.loads(out)}
    assert states[created[0]["id"]] == "used" and states[created[1]["id"]] == "disabled" and states[created[2]["id"]] == "open"
    assert all(item["code"] not in out for item in created)  # listings never show a code
    kit.assert_invariants(seed)
