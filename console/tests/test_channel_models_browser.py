"""The channel form's "Fetch models from the upstream" in a real browser (Playwright
driving Debian's Chromium): the button lists a fake OpenAI upstream's models (served
on loopback from a thread of its own) with checkboxes, select-all and each box fill
the Models field, and saving stores them; a refused key shows the upstream's refusal
in the words of the CLI and the API."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

import pytest

from gateway_core.testing import UpstreamServers
from gateway_openai.fake_upstream import EXPECTED_KEY, MODELS, FakeOpenAI

from .test_browser import expect, shot, sign_in


@pytest.fixture
def upstream() -> Iterator[FakeOpenAI]:
    """A fake OpenAI upstream served from a thread with its own event loop (the
    browser test is synchronous: no loop of the test's runs it)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    servers = UpstreamServers()
    fake = asyncio.run_coroutine_threadsafe(servers.start(FakeOpenAI()), loop).result(10)
    yield fake
    asyncio.run_coroutine_threadsafe(servers.close(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def test_the_button_lists_the_upstreams_models_and_fills_the_models_field(chromium, seed, users, passwords, start_gateway, upstream):
    gateway = start_gateway()
    context, errors = chromium
    page = context.new_page()
    sign_in(page, gateway.url, "root", passwords["root"])
    page.goto(gateway.url + "/console/admin/channels/new")
    page.fill("input[name=name]", "openai-main")
    page.select_option("select[name=type]", "openai")
    page.fill("input[name=base_url]", upstream.url + "/v1")
    page.fill("textarea[name=api_keys]", "sk-upstream-wrong-0123456789")
    page.fill("input[name=models]", "my-own-model")
    page.click("button:has-text('Fetch models from the upstream')")
    expect(page.locator("[data-models-message]")).to_have_text("the upstream refused the channel's key (401): Incorrect API key provided.")
    expect(page.locator("[data-models-list]")).to_be_hidden()

    page.fill("textarea[name=api_keys]", EXPECTED_KEY)
    upstream.models.append("acme-finetune-1")  # in no catalogue
    page.click("button:has-text('Fetch models from the upstream')")
    expect(page.locator("[data-models-boxes] label", has_text="acme-finetune-1")).to_contain_text("no price")
    expect(page.locator("[data-models-boxes] label", has_text="gpt-4o-mini")).not_to_contain_text("no price")
    upstream.models.pop()
    page.click("button:has-text('Fetch models from the upstream')")
    expect(page.locator("[data-models-message]")).to_have_text(f"the upstream lists {len(MODELS)} models, {len(MODELS)} not yet served by the channel")
    boxes = page.locator("[data-models-boxes] input[type=checkbox]")
    expect(boxes).to_have_count(len(MODELS))
    assert page.input_value("input[name=models]") == "my-own-model"  # nothing checked yet: the field as typed
    page.check("[data-models-all]")
    assert page.input_value("input[name=models]") == ", ".join(["my-own-model", *MODELS])
    shot(page, "31-admin-channel-upstream-models")
    page.locator("[data-models-boxes] label", has_text="text-embedding-3-small").locator("input").uncheck()
    assert page.input_value("input[name=models]") == ", ".join(["my-own-model", *(m for m in MODELS if m != "text-embedding-3-small")])
    assert page.evaluate("document.querySelector('[data-models-all]').indeterminate") is True
    page.click("button:has-text('Add channel')")
    page.wait_for_selector("text=Created.")
    (stored,) = seed.rows("SELECT id, models FROM channels WHERE name = 'openai-main'")
    assert json.loads(stored["models"]) == ["my-own-model", *(m for m in MODELS if m != "text-embedding-3-small")]

    page.goto(gateway.url + f"/console/admin/channels/{stored['id']}/edit")  # the stored key, left blank in the form
    page.click("button:has-text('Fetch models from the upstream')")
    expect(page.locator("[data-models-message]")).to_have_text(f"the upstream lists {len(MODELS)} models, 1 not yet served by the channel")
    checked = page.locator("[data-models-boxes] input:checked")
    expect(checked).to_have_count(len(MODELS) - 1)
    assert errors == [], errors
