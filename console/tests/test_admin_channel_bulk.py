"""The channel page's bulk actions: test the checked channels (each with its
response time), enable or disable them; operators only."""

from __future__ import annotations

import pytest

from gateway_openai.fake_upstream import Fault, FakeOpenAI


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


async def test_bulk_test_enable_and_disable_of_checked_channels(browsers, seed, users, upstream, start_gateway):
    one = seed.channel("one", type="openai", base_url=upstream.url, models=["gpt-x"], api_keys=["sk-upstream-test"])
    two = seed.channel("two", type="openai", base_url=upstream.url, models=["gpt-y"], api_keys=["sk-upstream-test"])
    start_gateway()
    root = await browsers("root")
    _, page = await root.get("/console/admin/channels")
    assert f'name="channel" value="{one}" form="bulk"' in page and 'id="bulk"' in page
    upstream.fail_next(Fault(status=401, body={"error": {"message": "Incorrect API key provided."}}))
    status, page = await root.post("/console/admin/channels/bulk", {"action": "test", "channel": [str(one), str(two)]}, csrf_from="/console/admin/channels")
    assert status == 200 and page.count("data-probe-channel=") == 2
    results = page[page.index('id="probe-results"'):page.index("</table>", page.index('id="probe-results"'))]
    assert ">OK<" in results and ">failed<" in results and " ms<" in results
    assert "sk-upstream-test" not in page
    await root.post("/console/admin/channels/bulk", {"action": "disable", "channel": [str(one), str(two)]}, csrf_from="/console/admin/channels")
    assert [row["enabled"] for row in seed.rows("SELECT enabled FROM channels WHERE id IN (?, ?)", (one, two))] == [0, 0]
    await root.post("/console/admin/channels/bulk", {"action": "enable", "channel": [str(two)]}, csrf_from="/console/admin/channels")
    assert seed.rows("SELECT id, enabled FROM channels WHERE id IN (?, ?) ORDER BY id", (one, two)) == [{"id": one, "enabled": 0}, {"id": two, "enabled": 1}]
    audited = seed.rows("SELECT action, target FROM audit_log WHERE action LIKE 'channel.%' ORDER BY id")
    assert [row["action"] for row in audited] == ["channel.disable", "channel.disable", "channel.enable"]
    status, page = await root.post("/console/admin/channels/bulk", {"action": "disable"}, csrf_from="/console/admin/channels")
    assert status == 400 and "Check at least one channel first." in page


async def test_bulk_channel_actions_are_for_operators(browsers, seed, users, gateway):
    channel_id = seed.rows("SELECT id FROM channels")[0]["id"]
    alice = await browsers("alice")
    status, _ = await alice.post("/console/admin/channels/bulk", {"action": "disable", "channel": str(channel_id)}, csrf_from="/console/keys")
    assert status == 403
    assert seed.rows("SELECT enabled FROM channels WHERE id = ?", (channel_id,)) == [{"enabled": 1}]
    root = await browsers("root")
    status, _ = await root.post("/console/admin/channels/bulk", {"action": "disable", "channel": str(channel_id)})
    assert status == 403 and seed.rows("SELECT enabled FROM channels WHERE id = ?", (channel_id,)) == [{"enabled": 1}]
