"""The admin layer's access part on both stores: tokens (hashed, scoped,
expiring, revoked), credits under an idempotency key at once, the audit log,
roles and the request-id lookup."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway_core.admin import Admin, Conflict, Invalid, NotFound, audit, credits, tokens, usage, users
from gateway_core.config import Config
from gateway_core.runtime.plugins import collect
from gateway_core.testing.stores import admin_ports


@pytest.fixture
async def admin(db_url, start_store):
    registry = collect(Config(db_path=db_url, load=()))
    store = await start_store(registry.migrations)
    return Admin(admin_ports(store)[0])


async def test_tokens_are_stored_hashed_scoped_and_end_when_revoked_or_expired_or_disabled(admin):
    alice = await users.create_user(admin, "alice")
    root = await users.create_user(admin, "root", is_admin=True)
    token, secret = await tokens.create_token(admin, alice.id, scope="write", name="ci")
    assert secret.startswith("rgt-") and token.prefix == secret[:8] + "…" and token.scope == "write"
    assert (await tokens.token_holder(admin, secret)).id == token.id
    assert await tokens.token_holder(admin, secret + "x") is None
    assert await tokens.token_holder(admin, "sk-" + secret[4:]) is None
    with pytest.raises(Invalid, match="only for admin users"):
        await tokens.create_token(admin, alice.id, scope="admin")
    with pytest.raises(Invalid):
        await tokens.create_token(admin, alice.id, scope="owner")
    with pytest.raises(Invalid):
        await tokens.create_token(admin, alice.id, expires_at=time.time() - 1)
    assert (await tokens.create_token(admin, root.id, scope="admin"))[0].scope == "admin"

    soon, soon_secret = await tokens.create_token(admin, alice.id, expires_at=time.time() + 0.3)
    assert await tokens.token_holder(admin, soon_secret) is not None
    await asyncio.sleep(0.4)
    assert await tokens.token_holder(admin, soon_secret) is None

    with pytest.raises(NotFound):
        await tokens.revoke_token(admin, token.id, owner=root.id)
    revoked = await tokens.revoke_token(admin, token.id, owner=alice.id)
    assert revoked.revoked_at is not None and await tokens.token_holder(admin, secret) is None
    assert (await tokens.revoke_token(admin, token.id)).revoked_at == revoked.revoked_at  # once

    other, other_secret = await tokens.create_token(admin, alice.id)
    await users.set_user_enabled(admin, alice.id, False)
    assert await tokens.token_holder(admin, other_secret) is None
    listed = await tokens.list_tokens(admin, alice.id)
    assert [item.id for item in listed] == [token.id, soon.id, other.id]
    assert len(await tokens.list_tokens(admin)) == 4


async def test_one_idempotency_key_credits_once_when_sent_at_once(admin):
    bob = await users.create_user(admin, "bob")
    sent = [credits.credit(admin, bob.id, 2_000_000, kind="topup", note="payment 7", idempotency_key="pay-7") for _ in range(20)]
    done = await asyncio.gather(*sent)
    assert len({item.ledger_id for item in done}) == 1 and sum(not item.replayed for item in done) == 1
    assert (await users.get_user(admin, bob.id)).balance_micros == 2_000_000
    with pytest.raises(Conflict, match="pay-7"):
        await credits.credit(admin, bob.id, 3_000_000, kind="topup", idempotency_key="pay-7")
    with pytest.raises(Conflict):
        await credits.credit(admin, bob.id, 2_000_000, kind="adjustment", note="x", idempotency_key="pay-7")
    taken = await credits.credit(admin, bob.id, -500_000, kind="adjustment", note="chargeback")
    assert taken.balance_after_micros == 1_500_000 and taken.idempotency_key is None
    with pytest.raises(Invalid):
        await credits.credit(admin, bob.id, -1, kind="topup")
    with pytest.raises(NotFound):
        await credits.credit(admin, 9999, 1, kind="topup")
    assert (await admin.store.check_ledger()).ok


async def test_the_audit_log_pages_newest_first_and_filters_by_record(admin):
    carol = await users.create_user(admin, "carol")
    who = audit.actor("token", carol.id, "carol", token_id=3, request_id="req_1")
    for n in range(5):
        await audit.record(admin, who, "key.update", f"key {n % 2}", {"name": f"v{n}"}, {"name": f"v{n + 1}"})
    newest = await audit.list_entries(admin, limit=3)
    assert [entry.after for entry in newest] == [{"name": "v5"}, {"name": "v4"}, {"name": "v3"}]
    older = await audit.list_entries(admin, before_id=newest[-1].id, limit=3)
    assert [entry.before for entry in older] == [{"name": "v1"}, {"name": "v0"}]
    only = await audit.list_entries(admin, target="key 1")
    assert [entry.target for entry in only] == ["key 1", "key 1"] and only[0].token_id == 3 and only[0].via == "token"


async def test_roles_change_but_nobody_drops_their_own_and_unknown_requests_are_none(admin):
    dave = await users.create_user(admin, "dave")
    assert (await users.set_role(admin, dave.id, True)).is_admin is True
    with pytest.raises(Invalid):
        await users.set_role(admin, dave.id, False, by=dave.id)
    assert (await users.set_role(admin, dave.id, False)).is_admin is False
    with pytest.raises(NotFound):
        await users.set_role(admin, 9999, True)
    assert await usage.find_request(admin, "req_nothing") is None
    found, more = await users.search_users(admin, query="DAV")
    assert [item.user.name for item in found] == ["dave"] and more is False
