"""The models-and-prices page (the user's groups' models, the group's ratio applied)
and the cost's breakdown on a request's log page."""

from __future__ import annotations

import pytest

from gateway_core.store.groups import set_group_ratio

pytestmark = pytest.mark.usefixtures("users")


async def test_the_models_page_and_the_cost_breakdown(gateway, seed, users, browsers, openai_client):
    seed.price("demo-chat", 2_000_000, 8_000_000, per_request_micros=500)
    seed._write(set_group_ratio, "default", 1_500_000)
    gateway.services.prices.invalidate()
    _, secret = seed.key(users["alice"])
    alice = await browsers("alice")
    status, page = await alice.get("/console/models")
    assert status == 200 and 'data-model="demo-chat"' in page
    assert ">3.00<" in page and ">12.00<" in page and "0.00075 per request" in page  # ×1.5

    await openai_client(gateway.url, secret).chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "hi"}])
    log_id = seed.rows("SELECT id FROM usage_logs ORDER BY id DESC LIMIT 1")[0]["id"]
    status, page = await alice.get(f"/console/logs/{log_id}")
    assert status == 200 and "per request 0.000750" in page and "group ratio ×1.5 included" in page


async def test_the_wallet_page_shows_where_the_budgets_stand(gateway, seed, users, browsers, openai_client):
    from gateway_core.store.limits import set_key_limits, set_user_limits

    seed.price("demo-chat", 2_000_000, 8_000_000)
    key_id, secret = seed.key(users["alice"], name="laptop")
    seed._write(set_key_limits, key_id, {"daily_budget_micros": 1_000_000})
    seed._write(set_user_limits, users["alice"], {"monthly_budget_micros": 30_000_000})
    await openai_client(gateway.url, secret).chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "hi"}])
    cost = seed.rows("SELECT cost_micros FROM usage_logs ORDER BY id DESC LIMIT 1")[0]["cost_micros"]
    assert cost > 0
    status, page = await (await browsers("alice")).get("/console/wallet")
    assert status == 200 and "<h2>Budgets</h2>" in page
    assert "key laptop" in page and "daily" in page and ">1.00<" in page
    assert "monthly" in page and ">30.00<" in page
    assert page.count(f">{cost / 1e6:.6f}".rstrip("0")) >= 2  # both windows counted the request's cost
