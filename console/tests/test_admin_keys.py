"""An operator on any user's keys from the user's page: edit, disable, enable,
delete; the owner's own key form; operators only."""

from __future__ import annotations


async def test_an_operator_edits_disables_and_deletes_a_users_key(browsers, seed, users, gateway):
    key_id, secret = seed.key(users["alice"], name="laptop")
    root = await browsers("root")
    page_path = f"/console/admin/users/{users['alice']}"
    _, page = await root.get(page_path)
    at = f"/console/admin/users/{users['alice']}/keys/{key_id}"
    assert f'href="{at}/edit"' in page and f'action="{at}/disable"' in page and f'action="{at}/delete"' in page
    status, form = await root.get(at + "/edit")
    assert status == 200 and f'action="{at}/edit"' in form and f'href="{page_path}"' in form and "laptop" in form
    edit = {"name": "laptop-2", "quota": "3.50", "expires": "", "models": "demo-chat", "allow_ips": "10.0.0.0/8", "rpm": "60", "tpm": "", "concurrency": ""}
    status, page = await root.post(at + "/edit", edit, csrf_from=at + "/edit")
    assert status == 200 and "laptop-2" in page
    row = seed.rows("SELECT name, quota_micros, models, allow_ips, rpm FROM api_keys WHERE id = ?", (key_id,))[0]
    assert row == {"name": "laptop-2", "quota_micros": 3_500_000, "models": '["demo-chat"]', "allow_ips": '["10.0.0.0/8"]', "rpm": 60}
    status, page = await root.post(at + "/edit", {**edit, "models": "no-such-model"}, csrf_from=at + "/edit")
    assert status == 400 and "no channel serves to the group" in page and "no-such-model" in page
    await root.post(at + "/disable", {}, csrf_from=page_path)
    assert seed.rows("SELECT enabled FROM api_keys WHERE id = ?", (key_id,)) == [{"enabled": 0}]
    await root.post(at + "/enable", {}, csrf_from=page_path)
    assert seed.rows("SELECT enabled FROM api_keys WHERE id = ?", (key_id,)) == [{"enabled": 1}]
    status, page = await root.post(at + "/delete", {}, csrf_from=page_path)
    assert status == 200 and seed.rows("SELECT deleted FROM api_keys WHERE id = ?", (key_id,)) == [{"deleted": 1}]
    row = page[page.index(f'data-key-id="{key_id}"'):]
    row = row[:row.index("</tr>")]
    assert ">deleted<" in row and "/edit" not in row and "/delete" not in row  # listed, marked, no actions
    audited = [r["action"] for r in seed.rows("SELECT action FROM audit_log WHERE target = ? ORDER BY id", (f"key {key_id}",))]
    assert audited == ["key.update", "key.disable", "key.enable", "key.delete"]


async def test_another_users_key_and_a_non_admin_are_refused(browsers, seed, users, gateway):
    key_id, _ = seed.key(users["bob"], name="bobs")
    root = await browsers("root")
    status, _ = await root.get(f"/console/admin/users/{users['alice']}/keys/{key_id}/edit")
    assert status == 404  # the path's user is not the key's owner
    status, _ = await root.post(f"/console/admin/users/{users['alice']}/keys/{key_id}/disable", {}, csrf_from="/console/admin/users")
    assert status == 404 and seed.rows("SELECT enabled FROM api_keys WHERE id = ?", (key_id,)) == [{"enabled": 1}]
    alice = await browsers("alice")
    status, _ = await alice.get(f"/console/admin/users/{users['bob']}/keys/{key_id}/edit")
    assert status == 403
    status, _ = await alice.post(f"/console/admin/users/{users['bob']}/keys/{key_id}/delete", {}, csrf_from="/console/keys")
    assert status == 403 and seed.rows("SELECT deleted FROM api_keys WHERE id = ?", (key_id,)) == [{"deleted": 0}]
