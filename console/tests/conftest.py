"""Fixtures of the console's tests: a seeded store, a running gateway, signed-in clients."""

from __future__ import annotations

import html
import re

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
