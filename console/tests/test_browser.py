"""The console in a real browser: Playwright driving Debian's Chromium, headless.

Chromium comes from Debian (``make install`` installs it when it is missing);
Playwright never downloads a browser here. Without Chromium these tests fail
and say how to install it. Screenshots of every page go to
``test-artifacts/console/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from gateway_console.forms import show_usd as show_money

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"  # as the chromium fixture makes it
PRICE_IN, PRICE_OUT = 3_000_000, 15_000_000  # micro-USD per million tokens


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def sign_in(page, base: str, name: str, password: str) -> None:
    page.goto(base + "/console/")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/console/dashboard*")


def test_a_user_creates_a_key_uses_it_reads_logs_and_wallet_and_disables_it(chromium, seed, users, passwords, start_gateway):
    seed.channel("demo2", type="demo", base_url="local://demo", models=["demo-two"], settings={"delay_ms": 0})
    seed.price("demo-chat", PRICE_IN, PRICE_OUT)
    seed.price("demo-two", PRICE_IN, PRICE_OUT)
    _, other_secret = seed.key(users["alice"], name="other-key")
    gateway = start_gateway()
    context, errors = chromium
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=gateway.url)
    page = context.new_page()

    page.goto(gateway.url + "/console/keys")
    page.wait_for_url("**/console/login?next=*")
    shot(page, "01-sign-in")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", passwords["alice"])
    page.click("button[type=submit]")
    page.wait_for_url("**/console/keys")
    shot(page, "02-keys")

    page.click("text=Create a key")
    page.fill("input[name=name]", "browser-key")
    page.fill("input[name=quota]", "5")
    shot(page, "03-key-form")
    page.click("button:has-text('Create key')")
    page.wait_for_selector("#secret")
    assert "shown only this once" in page.inner_text("main")
    shot(page, "04-key-created")
    shown = page.inner_text("#secret").strip()
    page.click("button[data-copy=secret]")
    page.wait_for_selector("button[data-copy=secret]:has-text('Copied')")
    secret = page.evaluate("navigator.clipboard.readText()")
    assert secret == shown and secret.startswith("sk-") and len(secret) > 40

    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    reply = client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "hello from the browser test"}])
    assert reply.usage.completion_tokens > 0
    other = openai.OpenAI(base_url=gateway.url + "/v1", api_key=other_secret, max_retries=0)
    other.chat.completions.create(model="demo-two", messages=[{"role": "user", "content": "other"}])

    page.click("nav >> text=Logs")
    page.wait_for_url("**/console/logs")
    row = seed.rows("SELECT * FROM usage_logs WHERE model = 'demo-chat'")[0]
    line = page.locator(f"tr[data-log-id='{row['id']}']")
    assert line.locator("td.in").inner_text() == str(row["input_tokens"]) == str(reply.usage.prompt_tokens)
    assert line.locator("td.out").inner_text() == str(row["output_tokens"]) == str(reply.usage.completion_tokens)
    assert "demo-chat" in line.inner_text() and "browser-key" in line.inner_text()
    assert page.locator("tr[data-log-id]").count() == 2
    shot(page, "05-logs")

    key_id = seed.rows("SELECT id FROM api_keys WHERE name = 'browser-key'")[0]["id"]
    page.select_option("select[name=key]", value=str(key_id))
    page.click("button:has-text('Filter')")
    page.wait_for_url("**/console/logs?key=*")
    assert page.locator("tr[data-log-id]").count() == 1 and "demo-chat" in page.inner_text("tbody")
    shot(page, "06-logs-by-key")
    page.goto(gateway.url + "/console/logs")
    page.select_option("select[name=model]", "demo-two")
    page.click("button:has-text('Filter')")
    page.wait_for_url("**/console/logs?*model=demo-two*")
    assert page.locator("tr[data-log-id]").count() == 1 and "other-key" in page.inner_text("tbody")
    shot(page, "07-logs-by-model")
    page.check("#live")  # live refresh: a new request appears without reloading
    other.chat.completions.create(model="demo-two", messages=[{"role": "user", "content": "live"}])
    expect(page.locator("tr[data-log-id]")).to_have_count(2, timeout=10_000)
    page.uncheck("#live")
    page.click("tbody a")
    page.wait_for_selector("text=Protocol / endpoint")
    assert "demo2" not in page.inner_text("main")  # channels are the operator's business
    shot(page, "08-log-detail")

    page.click("nav >> text=Quick start")
    assert f"{gateway.url}/v1" in page.inner_text("main")
    shot(page, "09-quickstart")

    page.click("nav >> text=API keys")
    key_row = page.locator("tr", has_text="browser-key")
    key_row.locator("button:has-text('Disable')").click()
    page.wait_for_selector("text=Disabled.")
    assert "disabled" in page.locator("tr", has_text="browser-key").inner_text()
    shot(page, "10-key-disabled")
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "again"}])

    page.click("nav >> text=Wallet")
    page.wait_for_selector("#balance")
    shot(page, "11-wallet")
    assert errors == [], errors
    charged = seed.rows("SELECT request_id, cost_micros FROM usage_logs WHERE cost_micros > 0")
    if not charged:  # the gateway recorded no cost for a priced model
        pytest.xfail("billing (issue 4) has not landed: the gateway charged nothing, so the wallet shows no charge")
    balance = seed.rows("SELECT balance_micros FROM users WHERE id = ?", (users["alice"],))[0]["balance_micros"]
    assert balance < 10_000_000
    assert page.inner_text("#balance") == show_money(balance) and page.get_attribute("#balance", "title") == f"{show_money(balance)} USD exactly"
    ledger = page.inner_text("table.ledger")
    for charge in charged:
        assert charge["request_id"] in ledger
    expect(page.locator("figure.chart[data-drawn] canvas")).to_be_visible()  # Chart.js drew the spending chart
    assert "demo-chat" in page.locator("figure.chart thead").inner_text()  # and its table names the model


def test_operator_pages_render_in_the_browser_and_on_a_phone(chromium, seed, users, passwords, start_gateway):
    gateway = start_gateway()
    context, errors = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "root", passwords["root"])
    for name, path, check in (
        ("20-admin-channels", "/console/admin/channels", "demo"),
        ("21-admin-channel-form", "/console/admin/channels/new", "Base URL"),
        ("22-admin-users", "/console/admin/users", "alice"),
        ("23-admin-user", f"/console/admin/users/{users['alice']}", "Top up"),
        ("24-admin-groups", "/console/admin/groups", "default"),
        ("25-admin-prices", "/console/admin/prices", "Set a price"),
        ("26-admin-usage", "/console/admin/usage", "Site-wide usage"),
        ("26-admin-codes", "/console/admin/codes", "Create a batch"),
        ("27-account", "/console/account", "Change password"),
    ):
        page.goto(gateway.url + path)
        assert check in page.inner_text("main"), path
        shot(page, name)
    page.goto(gateway.url + "/console/admin/channels")
    page.locator("tr", has_text="demo").locator("button:has-text('Test')").click()
    page.wait_for_selector("#probe-result")
    assert "OK" in page.inner_text("#probe-result")
    shot(page, "28-admin-channel-tested")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(gateway.url + "/console/keys")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # no sideways scrolling of the page
    shot(page, "29-keys-on-a-phone")
    page.click("button:has-text('Sign out')")
    page.wait_for_url("**/console/login?done=signed-out")
    assert errors == [], errors


def test_the_channel_form_shows_the_chosen_types_settings_and_keeps_what_was_typed(chromium, seed, users, passwords, start_gateway):
    gateway = start_gateway()
    context, errors = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "root", passwords["root"])
    page.goto(gateway.url + "/console/admin/channels/new")
    page.select_option("select[name=type]", "demo")
    expect(page.locator("fieldset[data-type=demo]")).to_be_visible()
    expect(page.locator("fieldset[data-type=gemini]")).to_be_hidden()
    page.fill("input[name=name]", "slow-demo")
    page.fill("input[name=base_url]", "local://demo")
    page.fill("input[name=models]", "demo-slow")
    page.fill("input[name=timeout_idle]", "45")
    page.fill("textarea[name=headers]", "X-Team: blue")
    page.fill("input[name='setting.demo.delay_ms']", "soon")
    page.click("button:has-text('Add channel')")
    expect(page.locator("p.error")).to_contain_text("setting 'delay_ms' must be a whole number from 0 to 60000, got 'soon'")
    expect(page.locator("fieldset[data-type=demo]")).to_be_visible()
    assert [page.input_value(f) for f in ("input[name=name]", "input[name=timeout_idle]", "textarea[name=headers]")] == ["slow-demo", "45", "X-Team: blue"]
    shot(page, "29-admin-channel-form-error")
    page.fill("input[name='setting.demo.delay_ms']", "120")
    page.click("button:has-text('Add channel')")
    page.wait_for_selector("text=Created.")
    (stored,) = seed.rows("SELECT settings, headers, timeout_idle FROM channels WHERE name = 'slow-demo'")
    assert (json.loads(stored["settings"]), json.loads(stored["headers"]), stored["timeout_idle"]) == ({"delay_ms": 120}, {"X-Team": "blue"}, 45.0)
    page.locator("tr", has_text="slow-demo").locator("a:has-text('Edit')").click()
    assert page.input_value("input[name='setting.demo.delay_ms']") == "120"
    page.select_option("select[name=type]", "gemini")
    expect(page.locator("fieldset[data-type=gemini]")).to_be_visible()
    expect(page.locator("fieldset[data-type=demo]")).to_be_hidden()
    shot(page, "30-admin-channel-form-gemini")
    assert errors == [], errors
