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
