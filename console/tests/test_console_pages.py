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
        ("admin-audit", "/console/admin/audit"),
    ):  # fmt: skip
        page_walk.go(path)
        page_walk.check(name)
    page_walk.go("/console/admin/channels")
    for button in page.locator("table.channels button, table.channels a").all():
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280, button.get_attribute("aria-label")
