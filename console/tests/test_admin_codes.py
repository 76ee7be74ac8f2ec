"""The redemption codes page: create a batch (its codes shown once), list by batch,
disable one, export a batch's listing; operators only."""

from __future__ import annotations

import re
import urllib.parse


async def test_an_operator_creates_lists_disables_and_exports_codes(browsers, seed, users, gateway):
    root = await browsers("root")
    form = {"count": "3", "value": "2.50", "expires": "", "group": "", "note": "launch"}
    status, page = await root.post("/console/admin/codes", form, csrf_from="/console/admin/codes")
    assert status == 200 and 'id="created-codes"' in page
    codes = re.findall(r"RG-[A-Z0-9-]+", page[page.index('<textarea id="codes"'):page.index("</textarea>")])
    assert len(codes) == 3
    batch = re.search(r'download="codes-(b_[0-9a-f]+)\.csv"', page).group(1)
    href = re.search(r'id="codes-csv" download="[^"]+" href="([^"]+)"', page).group(1)
    assert urllib.parse.unquote(href.split(",", 1)[1]).split() == ["code", *codes]
    _, listed = await root.get(f"/console/admin/codes?batch={batch}")
    assert listed.count("data-code-id=") == 3 and not any(code in listed for code in codes)  # shown once only
    code_id = int(re.search(r'data-code-id="(\d+)"', listed).group(1))
    await root.post(f"/console/admin/codes/{code_id}/disable", {"batch": batch}, csrf_from="/console/admin/codes")
    assert seed.rows("SELECT enabled FROM redemption_codes WHERE id = ?", (code_id,)) == [{"enabled": 0}]
    status, csv_text = await root.get(f"/console/admin/codes/export.csv?batch={batch}")
    lines = csv_text.splitlines()
    assert status == 200 and lines[0].startswith("id,batch,prefix,value_usd") and len(lines) == 4
    assert sum(",disabled," in line for line in lines) == 1 and all(",2.50," in line for line in lines[1:])
    assert not any(code in csv_text for code in codes)
    # a user redeems one: the list says so
    alice = await browsers("alice")
    await alice.post("/console/wallet/redeem", {"code": codes[0]}, csrf_from="/console/wallet")
    _, listed = await root.get(f"/console/admin/codes?batch={batch}")
    assert 'data-state="used"' in listed and ">alice<" in listed
    audited = [r["action"] for r in seed.rows("SELECT action FROM audit_log WHERE action LIKE 'code.%' ORDER BY id")]
    assert audited == ["code.create", "code.disable"]
    status, page = await root.post("/console/admin/codes", {**form, "count": "0"}, csrf_from="/console/admin/codes")
    assert status == 400 and "number of codes" in page
    status, page = await root.post("/console/admin/codes", {**form, "group": "nope"}, csrf_from="/console/admin/codes")
    assert status == 400 and "is not a group" in page


async def test_the_codes_page_is_for_operators(browsers, seed, users, gateway):
    alice = await browsers("alice")
    assert (await alice.get("/console/admin/codes"))[0] == 403
    assert (await alice.get("/console/admin/codes/export.csv"))[0] == 403
    status, _ = await alice.post("/console/admin/codes", {"count": "1", "value": "100"}, csrf_from="/console/keys")
    assert status == 403 and seed.rows("SELECT COUNT(*) AS n FROM redemption_codes") == [{"n": 0}]
