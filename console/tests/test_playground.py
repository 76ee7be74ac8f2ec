"""The playground in Chromium: a chat through one of the user's keys, streamed
from a fake OpenAI upstream (its real wire format, chunks a moment apart) through
the gateway to the page, each turn's tokens, cost and request id matching the
usage log."""

from __future__ import annotations

import asyncio
import threading

import attrs
import pytest

from gateway_core.money import format_usd
from gateway_core.testing import UpstreamServers
from gateway_openai.fake_upstream import FakeOpenAI

from .test_browser import expect, shot
from .test_dashboard import sign_in

MODEL = "gpt-fake"


@pytest.fixture
def openai_upstream():
    """A fake OpenAI upstream on a loopback port, served from a thread of its own
    (the browser tests are synchronous), streaming chunks 0.3 s apart."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-openai", daemon=True)
    thread.start()
    servers = UpstreamServers()
    fake = asyncio.run_coroutine_threadsafe(servers.start(FakeOpenAI(chunk_delay=0.3)), loop).result(timeout=30)
    yield fake
    asyncio.run_coroutine_threadsafe(servers.close(), loop).result(timeout=30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    loop.close()


@pytest.fixture
def playground_world(seed, users, openai_upstream):
    seed.channel("openai-fake", type="openai", base_url=openai_upstream.url, models=[MODEL])
    seed.price(MODEL, 3_000_000, 15_000_000)
    key_id, secret = seed.key(users["alice"], name="chat-key")
    seed.key(users["alice"], name="other-key", models=("demo-chat",))
    return {"key": key_id, "secret": secret}


def log_row(seed, request_id: str) -> dict:
    rows = seed.rows("SELECT * FROM usage_logs WHERE request_id = ?", (request_id,))
    assert rows, f"no log row for {request_id}"
    return rows[0]


def test_the_playground_streams_a_chat_and_shows_each_turns_tokens_cost_and_request_id(
    chromium, seed, users, passwords, playground_world, openai_upstream, start_gateway, relaygate_config
):
    gateway = start_gateway(attrs.evolve(relaygate_config, cost_header=True))
    context, errors = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "alice", passwords["alice"])
    page.click("nav >> text=Playground")
    page.wait_for_url("**/console/playground")
    page.select_option("#pg-key", label="chat-key (" + page.locator("#pg-key option", has_text="chat-key").get_attribute("data-prefix") + "…)")
    assert playground_world["secret"].startswith(page.locator("#pg-key option", has_text="chat-key").get_attribute("data-prefix"))
    assert page.eval_on_selector_all("#pg-model option", "o => o.map(x => x.value)") == ["demo-chat", MODEL]
    page.select_option("#pg-model", MODEL)

    # a secret of another key is refused in the page, before any request
    page.fill("#pg-secret", "sk-not-this-one")
    page.fill("#pg-message", "hello")
    page.click("#pg-send")
    expect(page.locator("#pg-error")).to_contain_text("not the key")
    assert not openai_upstream.requests

    page.fill("#pg-secret", playground_world["secret"])
    message = "tell me about streaming one word at a time"
    page.fill("#pg-message", message)
    page.click("#pg-send")
    answer = page.locator("li.turn.assistant").last
    # the text arrives while the answer is still streaming (not once it is whole)
    page.wait_for_function(
        "() => { const a = [...document.querySelectorAll('li.turn.assistant')].pop();"
        " return a && a.getAttribute('aria-busy') === 'true' && a.querySelector('.said').textContent.length > 0; }",
        timeout=20_000,
    )  # fmt: skip
    expect(answer).to_have_attribute("data-done", "true", timeout=30_000)
    assert answer.locator(".said").inner_text() == f"echo: {message}"
    request_id = answer.locator(".fact-request-id a").inner_text()
    row = log_row(seed, request_id)
    assert row["stream"] and row["key_id"] == playground_world["key"] and row["model"] == MODEL
    assert answer.locator(".fact-tokens").inner_text() == f"Tokens: {row['input_tokens']} in · {row['output_tokens']} out"
    assert row["cost_micros"] > 0 and answer.locator(".fact-cost").inner_text() == f"Cost: {format_usd(row['cost_micros'])} USD"
    assert answer.locator(".fact-request-id a").get_attribute("href").endswith(f"/console/logs/{row['id']}")
    assert openai_upstream.requests[-1]["body"]["stream"] is True
    shot(page, "playground-stream")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    shot(page, "playground-phone")
    page.set_viewport_size({"width": 1280, "height": 900})

    # a second turn, not streamed: the conversation goes along, the cost from the answer's header
    page.uncheck("#pg-stream")
    page.fill("#pg-message", "and now in one piece")
    page.click("#pg-send")
    second = page.locator("li.turn.assistant").nth(1)
    expect(second).to_have_attribute("data-done", "true", timeout=30_000)
    assert second.locator(".said").inner_text() == "echo: and now in one piece"
    sent = openai_upstream.requests[-1]["body"]
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"] and not sent.get("stream")
    request_id = second.locator(".fact-request-id").inner_text().removeprefix("Request id: ")
    row = log_row(seed, request_id)
    assert second.locator(".fact-cost").inner_text() == f"Cost: {format_usd(row['cost_micros'])} USD"
    assert second.locator(".fact-tokens").inner_text() == f"Tokens: {row['input_tokens']} in · {row['output_tokens']} out"
    assert not errors, errors


def test_a_refused_request_shows_the_gateways_error_and_request_id(chromium, seed, users, passwords, playground_world, start_gateway):
    gateway = start_gateway()
    context, errors = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "alice", passwords["alice"])
    page.goto(gateway.url + "/console/playground")
    prefix = page.locator("#pg-key option", has_text="chat-key").get_attribute("data-prefix")
    page.select_option("#pg-key", label=f"chat-key ({prefix}…)")
    page.fill("#pg-secret", prefix + "x" * 40)  # the key's prefix, a wrong secret
    page.fill("#pg-message", "hello")
    page.click("#pg-send")
    expect(page.locator("#pg-error")).to_contain_text("401")
    answer = page.locator("li.turn.assistant").last
    expect(answer).to_have_attribute("data-done", "true")
    assert "failed" in answer.get_attribute("class")
    assert answer.locator(".fact-request-id code").inner_text().strip()  # the id to quote when asking why
    assert not errors, errors


def test_a_user_without_a_key_is_told_to_create_one(chromium, seed, users, passwords, start_gateway):
    gateway = start_gateway()
    context, _ = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "bob", passwords["bob"])
    page.goto(gateway.url + "/console/playground")
    expect(page.locator("main")).to_contain_text("You have no enabled key")
