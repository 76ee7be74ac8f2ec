"""Fixtures of the console's tests: a seeded store, a running gateway, signed-in clients."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import aiohttp
import openai
import pytest

from gateway_core.secrets import hash_password
from gateway_core.store.users import set_password_hash

PASSWORDS = {"root": "root-password-1", "alice": "alice-password-1", "bob": "bob-password-1"}
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def set_password(seed, user_id: int, password: str) -> None:
    conn = seed.store.connect()
    try:
        set_password_hash(conn, user_id, hash_password(password))
    finally:
        conn.close()


@pytest.fixture
def users(seed) -> dict[str, int]:
    """An admin ``root`` and two users, ``alice`` (10 USD) and ``bob``, each with a password."""
    ids = {
        "root": seed.user("root", admin=True),
        "alice": seed.user("alice", balance_usd=10),
        "bob": seed.user("bob", balance_usd=5),
    }
    for name, user_id in ids.items():
        set_password(seed, user_id, PASSWORDS[name])
    seed.channel("demo", type="demo", base_url="local://demo", models=["demo-chat"], settings={"delay_ms": 0})
    return ids


def csrf_of(page: str) -> str:
    found = CSRF.search(page)
    assert found, "no CSRF token in the page"
    return html.unescape(found.group(1))


class Browser:
    """An HTTP client with its own cookie jar, signed in (or not) to the console."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))

    async def get(self, path: str, **kwargs) -> tuple[int, str]:
        async with self.http.get(self.base + path, allow_redirects=kwargs.pop("allow_redirects", True), **kwargs) as r:
            return r.status, await r.text()

    async def post(self, path: str, data: dict, *, csrf_from: str | None = None, **kwargs) -> tuple[int, str]:
        """POST a form; with ``csrf_from`` the page at that path supplies the CSRF token."""
        if csrf_from is not None:
            _, page = await self.get(csrf_from)
            data = {"csrf": csrf_of(page), **data}
        async with self.http.post(self.base + path, data=data, allow_redirects=kwargs.pop("allow_redirects", True), **kwargs) as r:
            return r.status, await r.text()

    async def sign_in(self, name: str, password: str | None = None, **kwargs) -> tuple[int, str]:
        """Sign in (``headers=`` such as ``X-Forwarded-For`` go with the form's POST)."""
        form = {"name": name, "password": password or PASSWORDS[name]}
        return await self.post("/console/login", form, csrf_from="/console/login", **kwargs)

    async def close(self) -> None:
        await self.http.close()


@pytest.fixture
def gateway(users, start_gateway):
    return start_gateway()


@pytest.fixture
def passwords() -> dict[str, str]:
    return dict(PASSWORDS)


@pytest.fixture
def csrf():
    return csrf_of


@pytest.fixture
async def browsers(request):
    """``await browsers(name=None, url=None)``: a client (signed in as ``name``) of
    the ``gateway`` fixture's gateway, or of the one at ``url``."""
    opened: list[Browser] = []

    async def open_browser(name: str | None = None, url: str | None = None) -> Browser:
        browser = Browser(url or request.getfixturevalue("gateway").url)
        opened.append(browser)
        if name is not None:
            status, page = await browser.sign_in(name)
            assert status == 200 and "Sign out" in page, page[:500]
        return browser

    yield open_browser
    for browser in opened:
        await browser.close()


@pytest.fixture
async def openai_client():
    """``openai_client(gateway_url, key)``: an async OpenAI client of the gateway, closed after the test."""
    made: list[openai.AsyncOpenAI] = []

    def make(url: str, key: str) -> openai.AsyncOpenAI:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=key, max_retries=0)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()


# --- the browser tests (Playwright driving Debian's Chromium) ------------------------------

CHROMIUM = os.environ.get("RELAYGATE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"  # axe-core 4.14.1, see its README
WIDE, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}


@pytest.fixture
def chromium(tmp_path):
    """A fresh headless Chromium context (its own profile), closed after the test."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}: the browser tests need Debian's chromium "
            "(run `make install` as root, or `apt-get install -y chromium`).",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is not installed: pip install -e 'console[test]' (never `playwright install`).", pytrace=False)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        context.set_default_timeout(15_000)
        errors: list[str] = []
        context.on("weberror", lambda error: errors.append(str(error.error)))
        try:
            yield context, errors
        finally:
            context.close()
            shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


class Walk:
    """One Chromium page walking the console of ``base``, with the checks every page gets."""

    def __init__(self, page, base: str) -> None:
        self.page = page
        self.base = base

    def go(self, path: str) -> None:
        self.page.goto(self.base + path)

    def sign_in(self, name: str, password: str | None = None) -> None:
        """Sign in through the form, then open the keys page."""
        self.go("/console/login")
        self.page.fill("input[name=name]", name)
        self.page.fill("input[name=password]", password or PASSWORDS[name])
        self.page.click("button[type=submit]")
        self.page.wait_for_url("**/console/dashboard**")  # the home page after sign-in
        self.go("/console/keys")  # where the tests begin

    def accessibility_problems(self) -> list[dict]:
        """axe-core's serious and critical violations on the page as it is now."""
        if not self.page.evaluate("typeof window.axe !== 'undefined'"):
            self.page.evaluate(AXE.read_text(encoding="utf-8"))  # run by the debugger protocol: the page's CSP does not apply
        found = self.page.evaluate(
            """async () => {
              const result = await axe.run(document, {resultTypes: ["violations"]});
              return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" "))}));
            }"""
        )
        return [problem for problem in found if problem["impact"] in ("serious", "critical")]

    def sideways(self) -> list[str]:
        """What scrolls sideways: the page itself, or a list in its scrolling box."""
        return self.page.evaluate(
            """() => {
              const wide = [];
              if (document.documentElement.scrollWidth > window.innerWidth + 1) wide.push("the page");
              for (const box of document.querySelectorAll(".scroll")) {
                if (box.classList.contains("sr-only")) continue;  // a chart's table, hidden from the eye once drawn
                if (box.scrollWidth > box.clientWidth + 1) wide.push(box.querySelector("table")?.className || "a box");
              }
              return wide;
            }"""
        )

    def check(self, name: str, *, phone: bool = True) -> None:
        """The page now: no serious accessibility problem, screenshots at 1280x800 and
        390x844 (``test-artifacts/console/``), and at 390 px nothing scrolls sideways."""
        page = self.page
        page.set_viewport_size(WIDE)
        problems = self.accessibility_problems()
        assert problems == [], f"{name}: {json.dumps(problems, indent=1)}"
        page.screenshot(path=str(ARTIFACTS / f"page-{name}-1280.png"), full_page=True)
        assert self.sideways() == [], f"{name} scrolls sideways at 1280 px: {self.sideways()}"
        if phone:
            page.set_viewport_size(PHONE)
            page.screenshot(path=str(ARTIFACTS / f"page-{name}-390.png"), full_page=True)
            assert self.sideways() == [], f"{name} scrolls sideways at 390 px: {self.sideways()}"
            problems = self.accessibility_problems()
            assert problems == [], f"{name} at 390 px: {json.dumps(problems, indent=1)}"
            page.set_viewport_size(WIDE)


@pytest.fixture
def walk(chromium):
    """``walk(base)``: a :class:`Walk` on a new page of the ``chromium`` context."""
    context, errors = chromium

    def open_walk(base: str) -> Walk:
        return Walk(context.new_page(), base)

    yield open_walk
    assert errors == [], errors
