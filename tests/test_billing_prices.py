"""Second-round prices: a tier above an input-token threshold, reasoning at its own
price, hour-long cache writes, a price per request — one pricing function for the
reservation and the charge — the cost header, the log row's breakdown, and the
models-and-prices list a user sees."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from gateway_core.admin import Admin
from gateway_core.admin.prices import models_for_user
from gateway_core.billing import testing as kit
from gateway_core.billing.cost import Metered, cost_breakdown, cost_micros, max_cost_micros
from gateway_core.billing.testing import MODEL
from gateway_core.records import PriceRecord
from gateway_core.testing.stores import admin_ports
from gateway_core.store.groups import set_group_ratio
from gateway_core.store.keys import set_key_cost_header
from gateway_openai.fake_upstream import FakeOpenAI

M = 1_000_000  # micro-USD in a USD
PRICE = PriceRecord(
    "m", 2 * M, 10 * M, cached_input_micros_per_mtok=M // 2, cache_write_micros_per_mtok=3 * M,
    cache_write_1h_micros_per_mtok=4 * M, reasoning_micros_per_mtok=20 * M, per_request_micros=1000,
    tier_threshold_tokens=1000, tier_input_micros_per_mtok=4 * M, tier_output_micros_per_mtok=15 * M,
)  # fmt: skip


def test_each_component_at_its_own_price_and_one_rounding():
    used = Metered(input_tokens=900, cached_input_tokens=100, cache_write_tokens=300, cache_write_1h_tokens=200,
                   output_tokens=500, reasoning_tokens=400, requests=1)  # fmt: skip
    # by hand, in micro-USD (a price of N USD per million tokens is N micro-USD a token): 500 uncached × 2
    # + 100 cached × 0.5 + 100 5-minute writes × 3 + 200 hour writes × 4 + 100 output × 10 + 400 reasoning × 20
    # + 1000 per request
    priced = cost_breakdown(PRICE, 1_000_000, used)
    assert priced.total == 1000 + 50 + 1100 + 1000 + 8000 + 1000 == 12150
    assert priced.as_dict() == {"input": 1000.0, "cached": 50.0, "cache_write": 1100.0, "output": 1000.0, "reasoning": 8000.0,
                                "per_request": 1000.0, "ratio_ppm": 1_000_000, "rounding": 0.0, "total": 12150}  # fmt: skip
    # one rounding for the sum: 1 token of each at 0.40 USD per million is 0.8 micro-USD → 1
    cheap = PriceRecord("c", 400_000, 400_000)
    tiny = cost_breakdown(cheap, 1_000_000, Metered(input_tokens=1, output_tokens=1))
    assert (tiny.total, tiny.as_dict()["rounding"]) == (1, 0.2)


def test_a_request_above_the_threshold_pays_the_tier_and_reservations_cover_every_charge():
    small = Metered(input_tokens=1000, output_tokens=100, requests=1)
    large = Metered(input_tokens=1001, output_tokens=100, requests=1)
    assert cost_micros(PRICE, 1_000_000, small) == 1000 + 2000 + 1000  # 1000 × 2 + 100 × 10, per million; per request
    assert cost_micros(PRICE, 1_000_000, large) == 1000 + 4004 + 1500  # 1001 × 4 + 100 × 15
    assert cost_breakdown(PRICE, 1_000_000, large).tier
    for input_tokens in (10, 999, 1000, 1001, 50_000):
        most = max_cost_micros(PRICE, 1_500_000, input_tokens=input_tokens, max_output_tokens=300)
        for cached, written, reasoning in ((0, 0, 0), (input_tokens, 0, 300), (0, input_tokens, 0), (0, 0, 300)):
            used = Metered(input_tokens=input_tokens, output_tokens=300, cached_input_tokens=cached, cache_write_tokens=written,
                           cache_write_1h_tokens=written, reasoning_tokens=reasoning, requests=1)  # fmt: skip
            assert cost_micros(PRICE, 1_500_000, used) <= most


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("openai", "demo"))


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


async def test_the_cost_header_the_breakdown_and_the_price_per_request_end_to_end(start_gateway, seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    seed.price(MODEL, kit.INPUT, kit.OUTPUT, per_request_micros=2_000, tier_threshold_tokens=5, tier_input_micros_per_mtok=5_000_000)
    seed._write(set_group_ratio, "default", 1_500_000)
    gateway = start_gateway()
    body = {"model": MODEL, "messages": [{"role": "user", "content": "one two three four five six seven eight"}], "max_tokens": 20}
    headers = {"Authorization": f"Bearer {secret}"}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/chat/completions", json=body, headers=headers) as response:
            assert response.status == 200 and "x-relaygate-cost-usd" not in response.headers  # not opted in
        seed._write(set_key_cost_header, key_id, True)
        gateway.services.keys.invalidate()
        async with http.post(gateway.url + "/v1/chat/completions", json=body, headers=headers) as response:
            answer = orjson.loads(await response.read())
            cost_header = response.headers["x-relaygate-cost-usd"]
    row = kit.usage_row(seed, response.headers["x-request-id"])
    usage = answer["usage"]
    assert usage["prompt_tokens"] > 5  # above the tier's threshold: input at 5.00, output at 10.00, ×1.5
    by_hand = -(-((usage["prompt_tokens"] * 5_000_000 + usage["completion_tokens"] * kit.OUTPUT) * 1_500_000 + 2_000 * 1_500_000 * 10**6) // 10**12)
    assert row["cost_micros"] == by_hand and cost_header == f"{by_hand / 1e6:.6f}".rstrip("0").rstrip(".")
    detail = orjson.loads(row["cost_detail"])
    assert detail["per_request"] == 3_000 and detail["tier"] and detail["ratio_ppm"] == 1_500_000 and detail["total"] == by_hand
    assert kit.balance_of(seed, user_id) == 10_000_000 - sum(r["cost_micros"] for r in seed.rows("SELECT cost_micros FROM usage_logs"))
    kit.assert_invariants(seed)


async def test_a_user_sees_the_models_of_their_groups_at_their_groups_prices(start_gateway, seed, upstream):
    user_id, _, _ = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    seed._write(set_group_ratio, "default", 1_500_000)
    seed.channel("elsewhere", type="openai", base_url=upstream.url, models=["hidden-model"], groups=["vip"])
    gateway = start_gateway()
    listed = await models_for_user(Admin(admin_ports(gateway.services.store)[0]), user_id)
    by_model = {item.model: item for item in listed}
    assert set(by_model) == {MODEL, kit.FREE_MODEL, kit.UNPRICED_MODEL}  # not the vip group's model
    assert by_model[kit.UNPRICED_MODEL].price is None  # listed as not available yet
    assert by_model[MODEL].price.input_micros_per_mtok == kit.INPUT * 3 // 2 and by_model[MODEL].ratio_ppm == 1_500_000
    assert by_model[kit.FREE_MODEL].price.free
