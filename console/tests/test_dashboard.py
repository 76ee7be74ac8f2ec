"""The dashboard in Chromium (Playwright): a user's and the site's figures over
each range match the usage log, times in the browser's zone with UTC on hover,
charts drawn by Chart.js with their values on hover and the same figures in a
table (shown without script). Usage rows are seeded straight into the log at
known times, besides requests made through the running gateway."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import openai
import pytest

from gateway_core.money import format_usd
from gateway_core.records import UsageRow
from gateway_core.store.usage import insert_usage

from .conftest import ARGS, CHROMIUM
from .test_browser import expect, shot

HOUR, DAY = 3600, 86_400
PRICE_IN, PRICE_OUT = 3_000_000, 15_000_000  # micro-USD per million tokens


def seed_usage(seed, rows: list[UsageRow]) -> None:
    """Write rows into the usage log as the gateway does when a request ends."""
    conn = seed.store.connect()
    try:
        with conn:
            for row in rows:
                insert_usage(conn, row)
    finally:
        conn.close()


def usage(n: int, at: float, user_id: int, key_id: int, key_name: str, model: str, cost: int, tokens: tuple[int, int], status: int = 200, channel: str = "demo") -> UsageRow:
    return UsageRow(
        request_id=f"seeded-{n}", started_at=at, protocol="openai", endpoint="chat", user_id=user_id, key_id=key_id,
        key_name=key_name, model=model, channel_id=1, channel_name=channel, input_tokens=tokens[0], output_tokens=tokens[1],
        cost_micros=cost, status=status, duration_ms=12.0,
    )  # fmt: skip


@pytest.fixture
def world(seed, users):
    """alice with two keys and usage 1 h, 2 h, 3 days and 20 days ago; bob with
    usage 1 h ago (never in alice's figures); one real request of alice's now."""
    seed.channel("demo-2", type="demo", base_url="local://demo", models=["demo-two"], settings={"delay_ms": 0})
    seed.price("demo-chat", PRICE_IN, PRICE_OUT)
    seed.price("demo-two", PRICE_IN, PRICE_OUT)
    first, secret = seed.key(users["alice"], name="first-key")
    second, _ = seed.key(users["alice"], name="second-key")
    bobs, _ = seed.key(users["bob"], name="bobs-key")
    now = time.time()
    alice = users["alice"]
    seed_usage(seed, [
        usage(1, now - 1 * HOUR, alice, first, "first-key", "demo-chat", 1_250_000, (100, 20)),
        usage(2, now - 2 * HOUR, alice, second, "second-key", "demo-two", 500_000, (40, 0), status=502, channel="demo-2"),
        usage(3, now - 3 * DAY, alice, first, "first-key", "demo-chat", 2_000_000, (300, 30)),
        usage(4, now - 20 * DAY, alice, second, "second-key", "demo-two", 3_000_000, (1_000, 100), channel="demo-2"),
        usage(5, now - 1 * HOUR, users["bob"], bobs, "bobs-key", "demo-chat", 9_000_000, (5, 5)),
    ])  # fmt: skip
    return {"first": first, "second": second, "secret": secret, "now": now}


def real_request(gateway, secret: str) -> dict:
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    reply = client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "hello dashboard"}])
    assert reply.usage.completion_tokens > 0
    return reply


def sign_in(page, base: str, name: str, password: str) -> None:
    page.goto(base + "/console/")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/console/dashboard(\?.*)?$"))


def stat(page, name: str) -> str:
    return page.inner_text(f"#stat-{name}").replace("USD", "").strip()


def table(page, selector: str) -> dict[str, list[str]]:
    """The rows of a table: the first cell's text to the other cells' texts."""
    rows = page.eval_on_selector_all(f"{selector} tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))")
    return {cells[0]: cells[1:] for cells in rows if len(cells) > 1}


def choose_range(page, value: str, first: str = "", last: str = "") -> None:
    page.select_option("select[name=range]", value)
    if value == "custom":
        page.fill("input[name=from]", first)
        page.fill("input[name=to]", last)
    with page.expect_navigation():
        page.click(".span-form button[type=submit]")
    page.wait_for_selector("figure[data-chart][data-drawn], figure[data-chart] p.muted")


def test_a_users_dashboard_matches_the_log_over_each_range(chromium, seed, users, passwords, world, start_gateway):
    gateway = start_gateway()
    real_request(gateway, world["secret"])
    live = seed.rows("SELECT * FROM usage_logs WHERE request_id NOT LIKE 'seeded-%'")[0]
    assert live["cost_micros"] > 0
    context, errors = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "alice", passwords["alice"])  # the home page after sign-in
    page.wait_for_selector("figure#chart-spend[data-drawn]")
    shot(page, "dashboard-user")

    # last 24 hours: the two seeded requests of the last hours and the real one; never bob's
    day_cost = 1_250_000 + 500_000 + live["cost_micros"]
    assert stat(page, "spend") == format_usd(day_cost)
    assert stat(page, "requests") == "3" and stat(page, "errors") == "1"
    assert stat(page, "tokens") == f"{100 + 20 + 40 + live['input_tokens'] + live['output_tokens']:,}"
    by_key = table(page, "#by-key")
    assert by_key["first-key"] == ["2", f"{100 + live['input_tokens']:,}", f"{20 + live['output_tokens']:,}", format_usd(1_250_000 + live["cost_micros"]), "0"]
    assert by_key["second-key"] == ["1", "40", "0", "0.50", "1"]
    assert set(table(page, "#by-model")) == {"demo-chat", "demo-two"}
    assert "bobs-key" not in page.inner_text("main") and "#by-user" not in page.content()

    choose_range(page, "7d")
    assert stat(page, "spend") == format_usd(day_cost + 2_000_000) and stat(page, "requests") == "4"
    choose_range(page, "30d")
    assert stat(page, "spend") == format_usd(day_cost + 5_000_000) and stat(page, "requests") == "5"
    assert table(page, "#by-key")["second-key"][3] == "3.50"
    day = datetime.fromtimestamp(world["now"] - 20 * DAY, UTC).date()
    choose_range(page, "custom", (day - timedelta(days=1)).isoformat(), (day + timedelta(days=1)).isoformat())
    assert stat(page, "spend") == "3.00" and stat(page, "requests") == "1"
    assert table(page, "#by-model") == {"demo-two": ["1", "1,000", "100", "3.00", "0"]}
    choose_range(page, "custom", "2026-02-10", "2026-01-01")
    assert "ends before it starts" in page.inner_text("[role=alert]")
    assert not errors, errors


def test_times_show_in_the_browsers_zone_with_utc_on_hover(seed, users, passwords, world, start_gateway, tmp_path):
    from playwright.sync_api import sync_playwright

    gateway = start_gateway()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            context = browser.new_context(timezone_id="Asia/Kolkata", locale="en-GB")  # UTC+05:30
            page = context.new_page()
            sign_in(page, gateway.url, "alice", passwords["alice"])
            page.wait_for_url("**tz=330**")  # the page asks again with the zone: hours and days are the browser's
            page.wait_for_selector("figure#chart-spend[data-drawn]")
            start = page.locator("p.span time").first
            utc = datetime.fromisoformat(start.get_attribute("datetime").replace("Z", "+00:00"))
            assert start.get_attribute("title") == utc.strftime("%Y-%m-%d %H:%M UTC")
            local = utc + timedelta(hours=5, minutes=30)
            assert local.strftime("%H:%M") in start.inner_text() and utc.strftime("%H:%M") not in start.inner_text()
            assert local.minute == 0  # hourly buckets start on the browser's hours
            first_row = page.locator("#chart-spend tbody th time").first
            assert first_row.get_attribute("title").endswith("UTC") and first_row.inner_text() != first_row.get_attribute("title")
        finally:
            browser.close()


def test_charts_show_values_on_hover_and_the_same_figures_in_a_table(chromium, seed, users, passwords, world, start_gateway):
    gateway = start_gateway()
    context, errors = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "alice", passwords["alice"])
    figure = page.locator("figure#chart-spend")
    figure.locator("canvas").wait_for()
    expect(figure).to_have_attribute("data-drawn", "true")
    table_box = figure.locator(".chart-table")
    expect(table_box).to_have_class(re.compile(r"\bsr-only\b"))  # for screen readers, not shown
    rows = figure.locator("tbody tr")
    spent = [i for i in range(rows.count()) if rows.nth(i).locator("td").first.inner_text() != "0.00"]
    assert len(spent) == 2  # the buckets 1 h and 2 h ago
    index = spent[-1]
    point = page.evaluate(
        "([id, i]) => { const c = Chart.getChart(document.querySelector(`#${id} canvas`)); const bar = c.getDatasetMeta(0).data[i];"
        " const box = c.canvas.getBoundingClientRect(); return {x: box.left + bar.x, y: box.top + (bar.y + bar.base) / 2}; }",
        ["chart-spend", index],
    )  # fmt: skip
    page.mouse.move(point["x"], point["y"])
    tip = figure.locator(".chart-tip")
    expect(tip).to_be_visible()
    cell = rows.nth(index).locator("td").first.inner_text()
    assert f"Spend: {cell} USD" in tip.inner_text() and tip.get_attribute("data-index") == str(index)
    assert "UTC" in tip.inner_text()  # the bucket's time, local and UTC
    shot(page, "dashboard-chart-hover")
    page.mouse.move(0, 0)
    expect(tip).to_be_hidden()
    figure.locator(".chart-toggle").click()
    expect(table_box).not_to_have_class(re.compile(r"\bsr-only\b"))
    expect(figure.locator(".chart-toggle")).to_have_attribute("aria-expanded", "true")
    tokens = page.locator("figure#chart-tokens tfoot td")
    assert [tokens.nth(i).inner_text() for i in range(3)] == ["140", "20", "160"]  # in, out, total of the bucket table
    assert not errors, errors


def test_without_script_the_charts_are_tables(seed, users, passwords, world, start_gateway):
    from playwright.sync_api import sync_playwright

    gateway = start_gateway()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_context(java_script_enabled=False).new_page()
            sign_in(page, gateway.url, "alice", passwords["alice"])
            figure = page.locator("figure#chart-spend")
            expect(figure.locator("table")).to_be_visible()
            expect(figure.locator(".chart-box")).to_be_hidden()
            cells = figure.locator("tbody td")
            figures = [cells.nth(i).inner_text() for i in range(cells.count())]
            assert sorted(f for f in figures if f != "0.00") == ["0.50", "1.25"]
            assert figure.locator("tfoot td").inner_text() == "1.75"
            expect(page.locator("#stat-spend")).to_contain_text("1.75")
        finally:
            browser.close()


def test_the_site_dashboard_adds_users_channels_and_their_health(chromium, seed, users, passwords, world, start_gateway):
    seed.channel("switched-off", type="demo", base_url="local://demo", models=["demo-off"], enabled=False)
    gateway = start_gateway()
    context, errors = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "root", passwords["root"])
    page.wait_for_selector("figure#chart-spend[data-drawn]")
    shot(page, "dashboard-site")
    assert stat(page, "spend") == format_usd(1_250_000 + 500_000 + 9_000_000) and stat(page, "requests") == "3"
    by_user = table(page, "#by-user")
    assert by_user["bob"][3] == "9.00" and by_user["alice"][3] == "1.75"
    by_channel = table(page, "#by-channel")
    assert by_channel["demo"][0] == "2" and by_channel["demo-2"] == ["1", "40", "0", "0.50", "1"]
    health = table(page, "#channel-health")
    assert health["demo"][0] == "ok" and health["switched-off"][0] == "disabled"
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: wide tables scroll in their box, the page does not
    page.reload()
    page.wait_for_selector("figure#chart-spend[data-drawn]")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    shot(page, "dashboard-site-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.click("text=Only my usage")
    page.wait_for_selector("#by-key")
    assert stat(page, "requests") == "0" and page.locator("#channel-health").count() == 0
    assert not errors, errors
