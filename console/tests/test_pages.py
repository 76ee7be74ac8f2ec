"""The console's pages doing their job, over real HTTP against a running gateway."""

from __future__ import annotations

import re
import time

import aiohttp
import openai
import pytest

from gateway_core.money import show_usd
from gateway_core.store.wallet import hold
from gateway_openai.fake_upstream import Fault, FakeOpenAI

pytestmark = pytest.mark.usefixtures("users")


def secret_of(page: str) -> str:
    return re.search(r'<code id="secret">(sk-[^<]+)</code>', page).group(1)


def add_usage(seed, user_id: int, count: int, *, model: str = "m", cost: int = 0, key_id: int | None = None, at: float | None = None) -> None:
    conn = seed.store.connect()
    at = at or time.time()
    conn.executemany(
        "INSERT INTO usage_logs (request_id, created_at, user_id, key_id, model, status, input_tokens, output_tokens, cost_micros) "
        "VALUES (?, ?, ?, ?, ?, 200, 10, 5, ?)",
        [(f"req_fill_{user_id}_{model}_{i}_{at}", at + i * 0.001, user_id, key_id, model, cost) for i in range(count)],
    )
    conn.commit()
    conn.close()


async def test_key_lifecycle_takes_effect_at_once(openai_client, browsers, seed, gateway):
    alice = await browsers("alice")
    form = {"name": "app", "group": "default", "quota": "3", "expires": "2099-01-31T12:00", "models": "demo-chat", "allow_ips": "127.0.0.1, ::1"}
    _, page = await alice.post("/console/keys/new", form, csrf_from="/console/keys/new")
    secret = secret_of(page)
    key = seed.rows("SELECT * FROM api_keys WHERE name = 'app'")[0]
    assert (key["quota_micros"], key["models"], key["allow_ips"]) == (3_000_000, '["demo-chat"]', '["127.0.0.1/32","::1/128"]')
    _, listing = await alice.get("/console/keys")
    assert "2099-01-31 12:00:00" in listing and "127.0.0.1/32" in listing and "0.00 / 3.00" in listing
    client = openai_client(gateway.url, secret)

    async def call() -> str:
        reply = await client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "x"}])
        return reply.choices[0].message.content

    assert await call()
    await alice.post(f"/console/keys/{key['id']}/disable", {}, csrf_from="/console/keys")
    with pytest.raises(openai.AuthenticationError):
        await call()  # no wait: the key cache was told
    await alice.post(f"/console/keys/{key['id']}/enable", {}, csrf_from="/console/keys")
    assert await call()
    status, _ = await alice.post(f"/console/keys/{key['id']}/edit", {"name": "app2", "quota": "", "models": "", "allow_ips": "", "expires": ""}, csrf_from="/console/keys")
    assert status == 200
    edited = seed.rows("SELECT name, quota_micros, models, allow_ips, expires_at FROM api_keys WHERE id = ?", (key["id"],))[0]
    assert edited == {"name": "app2", "quota_micros": None, "models": "[]", "allow_ips": "[]", "expires_at": None}
    status, page = await alice.post(f"/console/keys/{key['id']}/edit", {"name": "app2", "allow_ips": "not-an-ip"}, csrf_from="/console/keys")
    assert status == 400 and "not an IP address" in page
    await alice.post(f"/console/keys/{key['id']}/delete", {}, csrf_from="/console/keys")
    with pytest.raises(openai.AuthenticationError):
        await call()
    assert "app2" not in (await alice.get("/console/keys"))[1]


async def test_key_creation_only_in_open_groups(browsers, seed):
    alice = await browsers("alice")
    status, page = await alice.post("/console/keys/new", {"name": "x", "group": "vip"}, csrf_from="/console/keys/new")
    assert status == 400 and "not open to you" in page
    status, page = await alice.post("/console/keys/new", {"name": "x", "group": "default", "quota": "-1"}, csrf_from="/console/keys/new")
    assert status == 400
    assert seed.rows("SELECT count(*) AS n FROM api_keys") == [{"n": 0}]


async def test_logs_filter_and_page_by_keyset(browsers, seed, users):
    key_a, _ = seed.key(users["alice"], name="ka")
    key_b, _ = seed.key(users["alice"], name="kb")
    add_usage(seed, users["alice"], 70, model="model-a", key_id=key_a, at=time.time() - 1000)
    add_usage(seed, users["alice"], 3, model="model-b", key_id=key_b)
    add_usage(seed, users["bob"], 2, model="model-a")
    alice = await browsers("alice")
    _, page = await alice.get("/console/logs")
    assert page.count("data-log-id=") == 50 and "Older" in page and "Newer" not in page
    older = re.search(r'href="([^"]+)" rel="next"', page).group(1).replace("&amp;", "&")
    _, page2 = await alice.get(older)
    assert page2.count("data-log-id=") == 23 and "Newer" in page2 and "rel=\"next\"" not in page2
    first_ids = set(re.findall(r'data-log-id="(\d+)"', page))
    assert not first_ids & set(re.findall(r'data-log-id="(\d+)"', page2))
    newer = re.search(r'href="([^"]+)">← Newer', page2).group(1).replace("&amp;", "&")
    _, back = await alice.get(newer)
    assert set(re.findall(r'data-log-id="(\d+)"', back)) == first_ids
    _, by_key = await alice.get(f"/console/logs?key={key_b}")
    assert by_key.count("data-log-id=") == 3 and "model-a" not in by_key.split("<tbody")[1]
    _, by_model = await alice.get("/console/logs?model=model-a&status=200")
    assert by_model.count("data-log-id=") == 50
    _, recent = await alice.get("/console/logs?since=" + time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() - 300)))
    assert recent.count("data-log-id=") == 3
    status, bad = await alice.get("/console/logs?status=abc")
    assert status == 400 and "3-digit" in bad
    _, rows = await alice.get("/console/logs?fragment=rows&key=" + str(key_b))
    assert rows.strip().startswith("<tr") and rows.count("data-log-id=") == 3


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


async def test_log_detail_shows_the_upstream_error_and_each_attempt(openai_client, seed, users, upstream, start_gateway, browsers):
    seed.channel("flaky", type="openai", base_url=upstream.url, models=["gpt-x"], priority=1)
    seed.channel("steady", type="openai", base_url=upstream.url, models=["gpt-x"], priority=0)
    _, secret = seed.key(users["alice"])
    gateway = start_gateway()
    upstream.fail_next(Fault(status=503, body={"error": {"message": "overloaded <b>now</b>"}}))
    upstream.fail_next(Fault(status=400, body={"error": {"message": "bad temperature", "type": "invalid_request_error"}}))
    client = openai_client(gateway.url, secret)
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "x"}])
    log_id = seed.rows("SELECT id FROM usage_logs")[-1]["id"]
    root = await browsers("root", url=gateway.url)
    status, page = await root.get(f"/console/admin/logs/{log_id}")
    assert status == 200
    assert "flaky" in page and "steady" in page and "503" in page and "bad temperature" in page
    assert "<b>now</b>" not in page
    # the user sees a safe summary and the request id, not the operator's channels nor the upstream's words
    alice = await browsers("alice", url=gateway.url)
    status, page = await alice.get(f"/console/logs/{log_id}")
    request_id = seed.rows("SELECT request_id FROM usage_logs WHERE id = ?", (log_id,))[0]["request_id"]
    assert status == 200 and 'id="error-summary"' in page and f'<code id="request-id">{request_id}</code>' in page
    assert not any(word in page for word in ("flaky", "steady", "bad temperature", "overloaded"))


async def test_wallet_shows_balance_ledger_and_a_chart(browsers, seed, users):
    add_usage(seed, users["alice"], 3, model="gpt-a", cost=120_000)
    add_usage(seed, users["alice"], 2, model="gpt-b", cost=50_000, at=time.time() - 3 * 86400)
    add_usage(seed, users["alice"], 1, model="too-old", cost=999_000, at=time.time() - 40 * 86400)
    alice = await browsers("alice")
    _, page = await alice.get("/console/wallet")
    assert re.search(r'<strong id="balance"[^>]*>10\.00</strong>', page) and "top-up" in page and "test balance" in page
    chart = page[page.index('<figure class="chart"'):page.index("</figure>")]  # its table: the figures the chart draws
    assert '<th scope="col">gpt-a (USD)</th><th scope="col">gpt-b (USD)</th>' in chart and "too-old" not in page
    assert '<tfoot><tr><th scope="row">All</th><td class="num">0.36</td><td class="num">0.10</td><td class="num">0.46</td>' in chart
    assert "0.46 USD in all" in chart
    assert "reserved by" not in page
    seed._write(hold, users["alice"], 250_000, "req_in_flight")  # a request in progress reserves, moves no money
    _, page = await alice.get("/console/wallet")
    assert re.search(r'<strong id="balance"[^>]*>10\.00</strong>', page) and 'reserved by 1 request(s) in progress' in page
    assert '<span id="available">9.75</span> USD available' in page and "req_in_flight" not in page


async def test_quickstart_uses_the_real_address(browsers, gateway):
    alice = await browsers("alice")
    _, page = await alice.get("/console/quickstart")
    assert f'base_url=&#34;{gateway.url}/v1&#34;' in page  # OpenAI: with /v1
    assert f'Anthropic(base_url=&#34;{gateway.url}&#34;' in page  # Anthropic: without
    assert f'{{&#34;base_url&#34;: &#34;{gateway.url}&#34;}}' in page  # google-genai: without
    assert f"curl {gateway.url}/v1/chat/completions" in page and "demo-chat" in page


async def test_admin_manages_channels_with_masked_keys(browsers, seed, upstream, gateway):
    root = await browsers("root")
    form = {"name": "oa", "type": "openai", "base_url": upstream.url + "/v1", "api_keys": "sk-upstream-test",
            "models": "gpt-x", "model_map": "gpt-x=gpt-x-2026", "groups": "default", "priority": "2", "weight": "3", "enabled": "on"}  # fmt: skip
    status, page = await root.post("/console/admin/channels/new", form, csrf_from="/console/admin/channels/new")
    assert status == 200 and "sk-upstream-test" not in page and "sk-u…test" in page
    channel = seed.rows("SELECT * FROM channels WHERE name = 'oa'")[0]
    assert (channel["base_url"], channel["model_map"], channel["priority"]) == (upstream.url, '{"gpt-x":"gpt-x-2026"}', 2)
    _, edit = await root.get(f"/console/admin/channels/{channel['id']}/edit")
    assert "sk-upstream-test" not in edit
    edited = {**form, "api_keys": "", "models": "gpt-x, gpt-y"}
    await root.post(f"/console/admin/channels/{channel['id']}/edit", edited, csrf_from="/console/admin/channels")
    assert seed.rows("SELECT api_keys, models FROM channels WHERE id = ?", (channel["id"],)) == [{"api_keys": '["sk-upstream-test"]', "models": '["gpt-x","gpt-y"]'}]
    _, tested = await root.post(f"/console/admin/channels/{channel['id']}/test", {}, csrf_from="/console/admin/channels")
    assert "OK" in tested and "echo: ping" in tested
    assert upstream.requests[-1]["body"]["model"] == "gpt-x-2026"
    upstream.fail_next(Fault(status=401, body={"error": {"message": "Incorrect API key provided."}}))
    _, failed = await root.post(f"/console/admin/channels/{channel['id']}/test", {}, csrf_from="/console/admin/channels")
    assert "failed" in failed
    await root.post(f"/console/admin/channels/{channel['id']}/disable", {}, csrf_from="/console/admin/channels")
    assert seed.rows("SELECT enabled FROM channels WHERE id = ?", (channel["id"],)) == [{"enabled": 0}]
    status, page = await root.post("/console/admin/channels/new", {**form, "type": "nope"}, csrf_from="/console/admin/channels")
    assert status == 400 and "nope" in page


async def test_the_channel_page_shows_breakers_and_disabled_keys(browsers, seed, gateway):
    from gateway_core.records import key_fingerprint
    from gateway_core.store.request_store import BreakerReport
    from gateway_core.store.channel_health import save_breaker
    from gateway_core.store.channels import disable_channel_key

    keys = ("sk-healthy-0123456789", "sk-revoked-0123456789")
    channel_id = seed.channel("sick", type="demo", base_url="local://demo", models=["demo-chat"], api_keys=keys)
    seed._write(disable_channel_key, channel_id, key_fingerprint(keys[1]), 1, "upstream answered 401: Incorrect API key provided")
    seed._write(save_breaker, BreakerReport(channel_id, "", None, "open", 3, 1.0, 4102444800.0, "the upstream failed (500): boom", "w:1", 2.0))
    root = await browsers("root")
    _, page = await root.get("/console/admin/channels")
    assert 'data-breaker="open"' in page and "3 failure(s)" in page and "(500): boom" in page
    assert 'data-key-state="disabled"' in page and "upstream answered 401: Incorrect API key provided" in page
    assert "sk-r…6789" in page and keys[1] not in page and keys[0] not in page


async def test_admin_manages_users_groups_and_prices(openai_client, browsers, seed, users, gateway, csrf):
    root = await browsers("root")
    await root.post("/console/admin/groups", {"name": "vip", "ratio": "1"}, csrf_from="/console/admin/groups")
    form = [("name", "carol"), ("password", "carol-password"), ("groups", "default"), ("groups", "vip")]
    _, listing = await root.get("/console/admin/users")
    status, _ = await root.post("/console/admin/users", [("csrf", csrf(listing)), *form])
    assert status == 200
    carol = seed.rows("SELECT id FROM users WHERE name = 'carol'")[0]["id"]
    await root.post(f"/console/admin/users/{carol}/topup", {"amount": "12.5", "note": "invoice <42>"}, csrf_from="/console/admin/users")
    assert seed.rows("SELECT amount_micros, note FROM ledger WHERE user_id = ?", (carol,)) == [{"amount_micros": 12_500_000, "note": "invoice <42>"}]
    _, detail = await root.get(f"/console/admin/users/{carol}")
    assert "12.50" in detail and "invoice &lt;42&gt;" in detail and "vip" in detail
    carol_browser = await browsers()
    assert (await carol_browser.sign_in("carol", "carol-password"))[0] == 200
    _, secret_page = await carol_browser.post("/console/keys/new", {"name": "k", "group": "vip"}, csrf_from="/console/keys/new")
    secret = secret_of(secret_page)
    await root.post(f"/console/admin/users/{carol}/disable", {}, csrf_from="/console/admin/users")
    status, _ = await carol_browser.get("/console/keys", allow_redirects=False)
    assert status == 303  # a disabled user's session ends
    client = openai_client(gateway.url, secret)
    with pytest.raises(openai.AuthenticationError):
        await client.models.list()
    status, page = await root.post("/console/admin/groups", {"name": "vip", "ratio": "0.8", "rpm": "60", "tpm": "", "concurrency": "2"}, csrf_from="/console/admin/groups")
    assert status == 200
    group = seed.rows('SELECT * FROM "groups" WHERE name = ?', ("vip",))[0]
    assert group["ratio_ppm"] == 800_000
    if "rpm" in group:
        assert (group["rpm"], group["tpm"], group["concurrency"]) == (60, None, 2)
    await root.post("/console/admin/prices", {"model": "gpt-x", "input": "2.50", "output": "10", "cached_input": "1.25"}, csrf_from="/console/admin/prices")
    assert seed.rows("SELECT input_micros_per_mtok, output_micros_per_mtok, cached_input_micros_per_mtok FROM prices WHERE model = 'gpt-x'") == [
        {"input_micros_per_mtok": 2_500_000, "output_micros_per_mtok": 10_000_000, "cached_input_micros_per_mtok": 1_250_000}
    ]
    status, page = await root.post("/console/admin/prices", {"model": "bad", "input": "abc", "output": "1"}, csrf_from="/console/admin/prices")
    assert status == 400
    await root.post("/console/admin/prices/delete", {"model": "gpt-x"}, csrf_from="/console/admin/prices")
    assert seed.rows("SELECT * FROM prices WHERE model = 'gpt-x'") == []


async def test_admin_sees_site_wide_usage(browsers, seed, users):
    add_usage(seed, users["alice"], 4, model="gpt-a", cost=250_000)
    add_usage(seed, users["bob"], 1, model="gpt-b", cost=1_000_000)
    root = await browsers("root")
    _, page = await root.get("/console/admin/usage")
    assert "<strong>5</strong> requests" in page and "<strong>2.00</strong> USD" in page
    assert "alice" in page and "bob" in page
    chart = page[page.index('<figure class="chart"'):page.index("</figure>")]  # one series per model, in its table
    assert '<th scope="col">gpt-a (USD)</th><th scope="col">gpt-b (USD)</th>' in chart and "2.00 USD in all" in chart
    _, logs = await root.get(f"/console/admin/logs?user={users['bob']}")
    assert logs.count("data-log-id=") == 1
    log_id = re.search(r'data-log-id="(\d+)"', logs).group(1)
    assert (await root.get(f"/console/admin/logs/{log_id}"))[0] == 200


async def test_users_create_and_revoke_access_tokens_and_admins_read_the_audit_log(browsers, users, gateway):
    alice = await browsers("alice")
    status, page = await alice.get("/console/tokens")
    assert status == 200 and "You have no access tokens yet." in page and '<option value="admin"' not in page
    status, page = await alice.post("/console/tokens/new", {"name": "billing", "scope": "read"}, csrf_from="/console/tokens")
    assert status == 200 and "shown only this once" in page
    secret = re.search(r'<code id="secret">(rgt-[^<]+)</code>', page).group(1)
    async with aiohttp.ClientSession() as http:
        async with http.get(gateway.url + "/api/v1/me", headers={"authorization": f"Bearer {secret}"}) as response:
            assert response.status == 200 and (await response.json())["scope"] == "read"
        _, listed = await alice.get("/console/tokens")
        assert secret not in listed and secret[:8] in listed and "billing" in listed
        token_id = re.search(r'data-token-id="(\d+)"', listed).group(1)
        assert (await alice.post("/console/tokens/new", {"scope": "admin"}, csrf_from="/console/tokens"))[0] == 400
        bob = await browsers("bob")
        assert (await bob.post(f"/console/tokens/{token_id}/revoke", {}, csrf_from="/console/tokens"))[0] == 404
        status, page = await alice.post(f"/console/tokens/{token_id}/revoke", {}, csrf_from="/console/tokens")
        assert status == 200 and "Revoked." in page
        async with http.get(gateway.url + "/api/v1/me", headers={"authorization": f"Bearer {secret}"}) as response:
            assert response.status == 401

    root = await browsers("root")
    status, page = await root.get(f"/console/admin/audit?target=token+{token_id}")
    assert status == 200 and "token.revoke" in page and "token.create" in page and "alice" in page
    assert (await alice.get("/console/admin/audit"))[0] == 403


async def test_the_consoles_writes_are_in_the_audit_log_as_the_session(browsers, users, gateway, seed):
    alice = await browsers("alice")
    status, _ = await alice.post("/console/keys/new", {"name": "audited", "group": "default"}, csrf_from="/console/keys/new")
    assert status == 200
    key_id = seed.rows("SELECT id FROM api_keys WHERE name = 'audited'")[0]["id"]
    assert (await alice.post(f"/console/keys/{key_id}/disable", {}, csrf_from="/console/keys"))[0] == 200
    root = await browsers("root")
    assert (await root.post(f"/console/admin/users/{users['bob']}/topup", {"amount": "2.50"}, csrf_from=f"/console/admin/users/{users['bob']}"))[0] == 200
    assert (await root.post("/console/admin/prices", {"model": "demo-chat", "input": "1", "output": "2"}, csrf_from="/console/admin/prices"))[0] == 200
    _, page = await root.get(f"/console/admin/audit?target=key+{key_id}")
    assert "key.disable" in page and "key.create" in page and "session" in page and "alice" in page
    _, page = await root.get(f"/console/admin/audit?target=user+{users['bob']}")
    assert "wallet.topup" in page and "root" in page
    assert "price.set" in (await root.get("/console/admin/audit"))[1]


async def test_the_channel_form_names_each_types_settings_whole(browsers, gateway):
    root = await browsers("root")
    _, page = await root.get("/console/admin/channels/new")
    assert "Settings of the anthropic channel type" in page and "Settings of a " not in page
    assert '<span class="setting-name">parameter_rules</span>' in page  # kept on one line (console.css)
    _, css = await root.get("/console/static/console.css")
    assert ".setting-name { white-space: nowrap; }" in css


async def test_a_demo_channel_added_as_local_colon_slash_slash_reads_local_demo(browsers, seed, gateway):
    root = await browsers("root")
    form = {"name": "bare", "type": "demo", "base_url": "local://", "models": "demo-bare", "groups": "default",
            "priority": "0", "weight": "1", "enabled": "on", "api_keys": ""}  # fmt: skip
    status, page = await root.post("/console/admin/channels/new", form, csrf_from="/console/admin/channels/new")
    assert status == 200, page
    assert seed.rows("SELECT base_url FROM channels WHERE name = 'bare'") == [{"base_url": "local://demo"}]
    assert "local:<" not in page


async def test_quickstart_reads_as_sentences_and_lists_only_priced_models(browsers, seed, gateway):
    seed.channel("raw", type="demo", base_url="local://demo", models=["demo-unpriced"], free_unpriced=False)
    alice = await browsers("alice")
    _, page = await alice.get("/console/quickstart")
    assert "rather than in code: <code>export RELAYGATE_API_KEY=sk-…</code>" in page
    assert "API keys</a>). Models you can use: demo-chat" in page
    assert "demo-unpriced" not in page


async def test_money_reads_the_same_on_every_page_exact_to_the_micro_usd(browsers, seed, gateway):
    alice_id = seed.rows("SELECT id FROM users WHERE name = 'alice'")[0]["id"]
    seed.key(alice_id, name="tiny", quota_micros=100)  # 0.0001 USD
    seed.topup(alice_id, 390_811)
    alice, root = await browsers("alice"), await browsers("root")
    _, keys = await alice.get("/console/keys")
    _, user = await root.get(f"/console/admin/users/{alice_id}")
    assert "0.00 / 0.0001" in keys and "0.00 / 0.0001" in user and "0.00 / 0.00<" not in user
    _, wallet = await alice.get("/console/wallet")
    balance = seed.rows("SELECT balance_micros FROM users WHERE id = ?", (alice_id,))[0]["balance_micros"]
    assert balance % 10_000 and show_usd(balance) in wallet  # every digit: the balance after each entry moves
    assert f'<strong id="balance">{show_usd(balance)}</strong>' in user
    assert show_usd(1_234_567_891) == "1,234.567891" and show_usd(-12_500_000) == "-12.50" and show_usd(100) == "0.0001"
