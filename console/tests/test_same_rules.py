"""The console refuses what the CLI and the management API refuse, in the admin
layer's words (tests/test_user_life.py checks the other two fronts): a user name
with a space, a base URL that is not http(s), a key for a model no channel
serves, an absurd amount."""

from __future__ import annotations

import html

import pytest

from gateway_core.admin.rules import MAX_AMOUNT_MICROS
from gateway_core.money import format_usd

pytestmark = pytest.mark.usefixtures("users")


async def test_the_console_refuses_in_the_admin_layers_words(browsers, users):
    root, alice = await browsers("root"), await browsers("alice")
    cases = [
        (root, "/console/admin/users", {"name": "alice smith", "password": "a-password-1", "groups": "default"}, "/console/admin/users",
         "must not contain spaces or control characters, got 'alice smith'"),
        (root, "/console/admin/channels/new", {"name": "x", "type": "demo", "base_url": "ftp://files.example.com", "models": "m"},
         "/console/admin/channels/new", "must start with http:// or https:// or local://, got 'ftp://files.example.com'"),
        (alice, "/console/keys/new", {"name": "ci", "models": "demo-chta"}, "/console/keys/new", "names model(s) no channel serves to the group 'default': demo-chta"),
        (root, f"/console/admin/users/{users['alice']}/topup", {"amount": "2000000000"}, f"/console/admin/users/{users['alice']}",
         f"must be at most {format_usd(MAX_AMOUNT_MICROS)} USD, got 2000000000.00 USD"),
    ]
    for browser, path, form, page_with_csrf, words in cases:
        status, page = await browser.post(path, form, csrf_from=page_with_csrf)
        assert status == 400, (path, page[:2000])
        assert words in html.unescape(page), (path, words)
