"""Every console page in Chromium: an accessibility check (axe-core, shipped with
these tests) with no serious or critical violation, screenshots at 1280x800 and
390x844, and at 390 px no list that scrolls sideways. Then one test per defect a
walk-through found, each failing on the console before its fix."""

from __future__ import annotations

import csv
import io
import json
import re
import time

import openai
import pytest

PRICE_IN, PRICE_OUT = 3_000_000, 15_000_000  # micro-USD per million tokens
LONG = "a-very-long-model-name-that-goes-on-and-on-" + "x" * 60


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def add_failed_request(seed, user_id: int, key_id: int | None, request_id: str) -> int:
    """A request the upstream failed, logged as the gateway logs it: its channel and
    the upstream's own words (an organisation id) are the operator's business."""
    conn = seed.store.connect()
    try:
        cursor = conn.execute(
            "INSERT INTO usage_logs (request_id, created_at, user_id, key_id, key_name, protocol, endpoint, model, channel_name, "
            "stream, status, error_type, error_message, upstream_status, upstream_error, attempts, input_tokens, output_tokens, cost_micros) "
            "VALUES (?, ?, ?, ?, 'laptop', 'openai', 'chat', 'demo-chat', 'acme-primary', 0, 502, 'upstream_error', "
            "'upstream acme-primary answered 500: org-SECRET42 over quota', 500, '{\"error\": \"org-SECRET42 over quota\"}', "
            "'[{\"channel\": \"acme-primary\", \"status\": 500, \"error\": \"org-SECRET42 over quota\"}]', 0, 0, 0)",
            (request_id, time.time(), user_id, key_id),
        )
        conn.commit()
        return int(cursor.lastrowid)
    finally:
        conn.close()


def chat(gateway, secret: str, model: str = "demo-chat", stream: bool = False) -> str:
    """One request through the gateway; its request id."""
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    if stream:
        with client.chat.completions.with_streaming_response.create(
            model=model, messages=[{"role": "user", "content": "stream please"}], stream=True, stream_options={"include_usage": True}
        ) as raw:  # fmt: skip
            request_id = raw.headers["x-request-id"]
            for _ in raw.parse():
                pass
        return request_id
    raw = client.chat.completions.with_raw_response.create(model=model, messages=[{"role": "user", "content": "hello"}])
    return raw.headers["x-request-id"]


def key_id_of(seed, name: str) -> int:
    return seed.rows("SELECT id FROM api_keys WHERE name = ?", (name,))[0]["id"]


# --- every page ---------------------------------------------------------------------------


def test_every_page_is_accessible_and_usable_on_a_phone(walk, seed, users, start_gateway):
    seed.price("demo-chat", PRICE_IN, PRICE_OUT)
    for name in ("second", "third"):  # three channels: their buttons must stay on screen
        seed.channel(f"demo-{name}-with-a-rather-long-channel-name", type="demo", base_url="local://demo", models=["demo-chat", LONG])
    key_id, secret = seed.key(users["alice"], name="laptop-key-" + "k" * 80, models=["demo-chat"])
    seed.key(users["alice"], name="ci")
    gateway = start_gateway()
    chat(gateway, secret)
    chat(gateway, secret, stream=True)
    failed = add_failed_request(seed, users["alice"], key_id, "req_failed_for_the_walk")
    page_walk = walk(gateway.url)
    page = page_walk.page

    page_walk.go("/console/login")
    page_walk.check("login")
    page_walk.sign_in("alice")
    for name, path in (
        ("dashboard", "/console/dashboard"), ("playground", "/console/playground"),
        ("keys", "/console/keys"), ("key-new", "/console/keys/new"), ("key-edit", f"/console/keys/{key_id}/edit"),
        ("logs", "/console/logs"), ("log-detail", f"/console/logs/{failed}"), ("wallet", "/console/wallet"),
        ("models", "/console/models"), ("tokens", "/console/tokens"), ("quickstart", "/console/quickstart"),
        ("account", "/console/account"), ("not-found", "/console/no-such-page"),
    ):  # fmt: skip
        page_walk.go(path)
        page_walk.check(name)
    page_walk.go("/console/keys/new")
    page.fill("input[name=name]", "walk-key")
    page.click("button:has-text('Create key')")
    page.wait_for_selector("#secret")
    page_walk.check("key-created")
    page_walk.go("/console/tokens")
    page.fill("input[name=name]", "walk-token")
    page.click("button:has-text('Create the token')")
    page.wait_for_selector("#secret")
    page_walk.check("token-created")

    page.click("button:has-text('Sign out')")
    page_walk.sign_in("root")
    channel_id = seed.rows("SELECT id FROM channels ORDER BY id LIMIT 1")[0]["id"]
    for name, path in (
        ("admin-channels", "/console/admin/channels"), ("admin-channel-new", "/console/admin/channels/new"),
        ("admin-channel-edit", f"/console/admin/channels/{channel_id}/edit"), ("admin-users", "/console/admin/users"),
        ("admin-user", f"/console/admin/users/{users['alice']}"), ("admin-groups", "/console/admin/groups"),
        ("admin-prices", "/console/admin/prices"), ("admin-usage", "/console/admin/usage"),
        ("admin-logs", "/console/admin/logs"), ("admin-log-detail", f"/console/admin/logs/{failed}"),
        ("admin-audit", "/console/admin/audit"), ("admin-dashboard", "/console/dashboard"),
        ("admin-codes", "/console/admin/codes"),
    ):  # fmt: skip
        page_walk.go(path)
        page_walk.check(name)
    page.fill("input[name=value]", "5")
    page.click("button:has-text('Create the codes')")
    page.wait_for_selector("#created-codes")
    page_walk.check("admin-codes-created")
    page_walk.go("/console/admin/channels")
    for button in page.locator("table.channels button, table.channels a").all():
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280, button.get_attribute("aria-label")


# --- one test per defect ------------------------------------------------------------------


def test_a_new_secret_is_shown_once_and_reloading_its_page_creates_nothing(walk, seed, users, start_gateway):
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("alice")
    ui.go("/console/keys/new")
    page.fill("input[name=name]", "only-once")
    page.click("button:has-text('Create key')")
    page.wait_for_url("**/console/keys/*/created")
    secret = page.inner_text("#secret").strip()
    assert secret.startswith("sk-")
    page.reload()  # before: the form was posted again and a second, unseen key created
    expect(page.locator("#secret-gone")).to_contain_text("shown once")
    assert page.locator("#secret").count() == 0 and secret not in page.content()
    assert seed.rows("SELECT count(*) AS n FROM api_keys WHERE user_id = ?", (users["alice"],)) == [{"n": 1}]
    ui.go("/console/tokens")
    page.fill("input[name=name]", "script")
    page.click("button:has-text('Create the token')")
    page.wait_for_url("**/console/tokens/*/created")
    assert page.inner_text("#secret").strip().startswith("rgt-")
    page.reload()
    expect(page.locator("#secret-gone")).to_be_visible()
    assert seed.rows("SELECT count(*) AS n FROM access_tokens") == [{"n": 1}]


def test_the_key_form_refuses_a_past_expiry_unknown_models_and_too_long_names_and_sets_rate_limits(walk, seed, users, start_gateway):
    key_id, _ = seed.key(users["alice"], name="live")
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("alice")
    ui.go("/console/keys/new")
    page.fill("input[name=name]", "n" * 5000)  # before: silently cut to 100 characters
    page.click("button:has-text('Create key')")
    expect(page.locator("p.error")).to_have_text("The name is too long: 5,000 characters, 100 at most.")
    page.fill("input[name=name]", "typo")
    page.fill("input[name=models]", "demo-chat, demo-caht")
    page.click("button:has-text('Create key')")
    expect(page.locator("p.error")).to_contain_text("names model(s) no channel serves to the group 'default': demo-caht (its models: demo-chat)")
    page.fill("input[name=models]", "demo-chat")
    page.fill("input[name=quota]", "-1")
    page.click("button:has-text('Create key')")
    expect(page.locator("p.error")).to_have_text("quota must not be negative: '-1'")  # the admin layer's words, as the CLI's and the API's
    assert seed.rows("SELECT count(*) AS n FROM api_keys") == [{"n": 1}]

    ui.go(f"/console/keys/{key_id}/edit")
    page.fill("input[name=expires]", "2020-01-31T12:00")  # before: accepted, cutting the live key off at once
    page.click("button:has-text('Save')")
    expect(page.locator("p.error")).to_contain_text("The expiry 2020-01-31 12:00:00 UTC is in the past")
    assert seed.rows("SELECT expires_at FROM api_keys WHERE id = ?", (key_id,)) == [{"expires_at": None}]
    page.fill("input[name=expires]", "")
    page.fill("input[name=rpm]", "60")
    page.fill("input[name=concurrency]", "2")
    page.click("button:has-text('Save')")
    page.wait_for_selector("text=Saved.")
    assert seed.rows("SELECT rpm, tpm, concurrency FROM api_keys WHERE id = ?", (key_id,)) == [{"rpm": 60, "tpm": None, "concurrency": 2}]
    ui.go(f"/console/keys/{key_id}/edit")
    assert (page.input_value("input[name=rpm]"), page.input_value("input[name=tpm]")) == ("60", "")
    ui.go("/console/tokens")  # an access token that expired before it was made is refused too
    page.fill("input[name=expires]", "2021-06-01T08:00")
    page.click("button:has-text('Create the token')")
    expect(page.locator("p.error")).to_contain_text("The expiry 2021-06-01 08:00:00 UTC is in the past")
    assert seed.rows("SELECT count(*) AS n FROM access_tokens") == [{"n": 0}]


def test_group_names_are_checked_users_groups_are_checkboxes_and_base_urls_need_a_web_scheme(walk, seed, users, start_gateway):
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("root")
    ui.go("/console/admin/groups")
    page.fill("input[name=name]", "name with spaces")
    page.click("button:has-text('Save group')")
    expect(page.locator("p.error")).to_contain_text("'name with spaces' is not a group name")
    page.fill("input[name=name]", "vip")
    page.click("button:has-text('Save group')")
    page.wait_for_selector("text=Saved.")

    ui.go(f"/console/admin/users/{users['bob']}")
    groups = page.locator("form[action$='/groups'] input[type=checkbox]")
    assert sorted(groups.evaluate_all("boxes => boxes.map(b => b.value)")) == ["default", "vip"]
    page.check("input[name=groups][value=vip]")
    page.click("button:has-text('Save groups')")
    page.wait_for_selector("text=Saved.")
    assert seed.rows("SELECT group_name FROM user_groups WHERE user_id = ? ORDER BY group_name", (users["bob"],)) == [
        {"group_name": "default"}, {"group_name": "vip"}]  # fmt: skip
    assert [row["name"] for row in seed.rows('SELECT name FROM "groups" ORDER BY name')] == ["default", "vip"]
    page.fill("form[action$='/topup'] input[name=amount]", "-5")
    page.click("button:has-text('Add to balance')")
    expect(page.locator("p.error")).to_have_text("Amount must not be negative: '-5'")  # before: "Amount: amount must not be negative"

    ui.go("/console/admin/channels/new")
    page.select_option("select[name=type]", "openai")
    page.fill("input[name=name]", "ftp-one")
    page.fill("input[name=base_url]", "ftp://files.example")
    page.fill("input[name=models]", "gpt-x")
    page.fill("textarea[name=api_keys]", "sk-upstream-0123456789")
    page.click("button:has-text('Add channel')")
    expect(page.locator("p.error")).to_have_text("base url must start with http:// or https://, got 'ftp://files.example'")  # the admin layer's rule, as the CLI and the API say it
    assert seed.rows("SELECT count(*) AS n FROM channels WHERE name = 'ftp-one'") == [{"n": 0}]


def test_long_values_are_cut_and_shown_whole_on_hover_and_focus(walk, seed, users, start_gateway):
    long_name = "release-pipeline-" + "z" * 120
    seed.key(users["alice"], name=long_name)
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("alice")
    cell = page.locator("table.keys td .clip").first
    assert cell.get_attribute("title") == long_name and cell.get_attribute("tabindex") == "0"
    assert cell.bounding_box()["width"] < 300  # cut to its column (before: the whole name pushed the columns off screen)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert page.locator("table.keys button").last.bounding_box()["x"] < 1280
    page.keyboard.press("Tab")  # the skip link, then the header's links …
    cell.focus()
    assert cell.evaluate("el => getComputedStyle(el).whiteSpace") == "normal"  # the whole value while focused
    assert cell.bounding_box()["height"] > 30


def test_users_see_a_safe_summary_and_the_request_id_admins_the_whole_error(walk, seed, users, start_gateway):
    key_id, _ = seed.key(users["alice"], name="laptop")
    log_id = add_failed_request(seed, users["alice"], key_id, "req_user_asks_about_this")
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("alice")
    ui.go(f"/console/logs/{log_id}")
    text = page.inner_text("main")
    assert "acme-primary" not in text and "SECRET42" not in text and "SECRET42" not in page.content()  # before: both shown
    expect(page.locator("#error-summary")).to_contain_text("failed with status 502")
    assert page.inner_text("#request-id") == "req_user_asks_about_this"
    page.click("button:has-text('Sign out')")
    ui.sign_in("root")
    ui.go(f"/console/admin/logs/{log_id}")
    text = page.inner_text("main")
    assert "acme-primary" in text and "org-SECRET42 over quota" in text


def test_the_users_page_pages_and_searches(walk, seed, users, start_gateway):
    for number in range(120):
        seed.user(f"member-{number:03d}")
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("root")
    ui.go("/console/admin/users")
    assert page.locator("tr[data-user-id]").count() == 50  # before: all 123 on one page
    page.click("a:has-text('Next page')")
    assert page.locator("tr[data-user-id]").count() == 50
    page.click("a:has-text('Next page')")
    assert page.locator("tr[data-user-id]").count() == 23 and page.locator("a:has-text('Next page')").count() == 0
    page.fill("input[name=q]", "MEMBER-07")
    page.click("button:has-text('Search')")
    names = page.locator("tr[data-user-id] td:first-child").all_inner_texts()
    assert names == [f"member-{n:03d}" for n in range(70, 80)]


def test_header_contrast_skip_link_and_the_names_of_repeated_buttons(walk, seed, users, start_gateway):
    seed.key(users["alice"], name="first")
    seed.key(users["alice"], name="second")
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("alice")
    ratio = page.evaluate(
        """() => {
          const rgb = (c) => c.match(/\\d+/g).slice(0, 3).map(Number);
          const lum = (c) => { const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                               return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
          const link = getComputedStyle(document.querySelector(".top nav a")).color;
          const back = getComputedStyle(document.querySelector(".top")).backgroundColor;
          const [a, b] = [lum(link), lum(back)].sort((x, y) => y - x);
          return (a + 0.05) / (b + 0.05);
        }"""
    )
    assert ratio >= 4.5, ratio  # before: 4.28
    page.keyboard.press("Tab")
    skip = page.locator("a.skip")
    expect(skip).to_be_focused()
    assert skip.bounding_box()["y"] >= 0  # on screen once focused
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    for name in ("first", "second"):  # before: every row's buttons were just "Disable" and "Delete"
        assert page.get_by_role("button", name=f"Delete key {name}", exact=True).count() == 1
        assert page.get_by_role("button", name=f"Disable key {name}", exact=True).count() == 1


def test_the_sign_in_page_says_how_long_to_wait_when_throttled(walk, seed, users, start_gateway):
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    message = ""
    for _ in range(6):
        ui.go("/console/login")
        page.fill("input[name=name]", "alice")
        page.fill("input[name=password]", "not-her-password")
        page.click("button[type=submit]")
        message = page.inner_text("p.error")
        if "Too many" in message:
            break
    assert re.fullmatch(r"Too many failed sign-ins from your address: wait \d+ seconds? and try again\.", message), message
    ui.check("login-throttled", phone=False)


# --- logs and wallet ----------------------------------------------------------------------


def test_logs_search_by_request_id_totals_models_stream_columns_export_and_wallet_rows(walk, seed, users, start_gateway):
    seed.channel("demo2", type="demo", base_url="local://demo", models=["demo-two"], settings={"delay_ms": 5})
    seed.price("demo-chat", PRICE_IN, PRICE_OUT)
    seed.price("demo-two", PRICE_IN, PRICE_OUT)
    _, secret = seed.key(users["alice"], name="laptop")
    seed.key(users["bob"], name="bobs")
    gateway = start_gateway()
    plain = chat(gateway, secret)
    streamed = chat(gateway, secret, model="demo-two", stream=True)
    rows = {row["request_id"]: row for row in seed.rows("SELECT * FROM usage_logs")}
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("alice")
    ui.go("/console/logs")
    totals = page.inner_text("#totals")
    tokens_in = sum(row["input_tokens"] for row in rows.values())
    cost = sum(row["cost_micros"] for row in rows.values())
    assert "2 requests" in totals and f"{tokens_in} input" in totals and f"{cost / 1e6:.6f} USD" in totals
    assert page.locator("select[name=model] option").all_inner_texts() == ["any model", "demo-chat", "demo-two"]
    line = page.locator(f"tr:has-text('{streamed}')")
    assert line.locator("td.stream").inner_text() == "yes" and line.locator("td.ttft").inner_text().endswith("ms")
    assert page.locator(f"tr:has-text('{plain}') td.stream").inner_text() == "no"

    page.select_option("select[name=model]", "demo-two")
    page.click("button:has-text('Filter')")
    page.wait_for_url("**/console/logs?*model=demo-two*")
    assert page.inner_text("#totals").startswith("1 request\n") and page.locator("tr[data-log-id]").count() == 1
    with page.expect_download() as download:
        page.click("#export")
    exported = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    assert [row["request_id"] for row in exported] == [streamed] and "channel_name" not in exported[0]

    page.fill("input[name=request]", plain)
    page.click("button:has-text('Find')")
    page.wait_for_url("**/console/logs?request=*")
    assert page.locator("tr[data-log-id]").count() == 1 and plain in page.inner_text("tbody")
    page.click("tbody a")
    page.click("#wallet-link")
    page.wait_for_url("**/console/wallet?request=*")
    ledger = page.locator("tr[data-ledger-id]")
    assert ledger.count() == 1 and plain in ledger.inner_text() and "request" in ledger.inner_text()
    ledger.locator("a").click()  # and back from the wallet row to its log
    page.wait_for_url("**/console/logs?request=*")
    assert page.locator("tr[data-log-id]").count() == 1

    page.click("button:has-text('Sign out')")
    ui.sign_in("bob")
    ui.go(f"/console/logs?request={plain}")  # another user's request is not found
    assert page.locator("tr[data-log-id]").count() == 0


def test_the_wallet_reads_money_shows_budgets_redeems_and_operators_edit_budgets(walk, seed, users, start_gateway, tmp_path):
    seed.topup(users["alice"], 12_345_678_901, "a large top-up")
    key_id, _ = seed.key(users["alice"], name="laptop")
    gateway = start_gateway()
    ui = walk(gateway.url)
    page = ui.page
    ui.sign_in("root")
    ui.go(f"/console/admin/users/{users['alice']}")
    budget_form = page.locator("form[action$='/budgets']").first
    budget_form.locator("input[name=daily]").fill("5")
    budget_form.locator("input[name=monthly]").fill("100")
    budget_form.locator("button").click()
    page.wait_for_selector("text=Saved.")
    row = page.locator(f"tr[data-key-id='{key_id}']")
    row.locator("input[name=weekly]").fill("2.5")
    row.get_by_role("button", name="Save the budgets of key laptop").click()
    page.wait_for_selector("text=Saved.")
    (user,) = seed.rows("SELECT daily_budget_micros, weekly_budget_micros, monthly_budget_micros FROM users WHERE id = ?", (users["alice"],))
    (key,) = seed.rows("SELECT weekly_budget_micros, locks FROM api_keys WHERE id = ?", (key_id,))
    assert user == {"daily_budget_micros": 5_000_000, "weekly_budget_micros": None, "monthly_budget_micros": 100_000_000}
    assert key["weekly_budget_micros"] == 2_500_000 and json.loads(key["locks"])["weekly_budget_micros"] == 2_500_000

    page.click("button:has-text('Sign out')")
    ui.sign_in("alice")
    ui.go("/console/wallet")
    assert page.inner_text("#balance") == "12,355.678901"  # 10 + 12,345.678901 USD: separators, exact to the micro-USD
    assert page.get_attribute("#balance", "title") == "12,355.678901 USD exactly"
    budgets = page.inner_text("table.budgets")
    assert "key laptop" in budgets and "weekly" in budgets and "2.50" in budgets and "100.00" in budgets
    topup = page.locator("tr[data-ledger-id]", has_text="a large top-up")
    assert "top-up" in topup.inner_text() and "+12,345.678901" in topup.inner_text()
    page.fill("input[name=code]", "RG-AAAA-BBBB-CCCC-DDDD")
    page.click("button:has-text('Redeem')")
    expect(page.locator("p.error")).to_contain_text("does not exist")
