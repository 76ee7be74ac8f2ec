"""Sign-in, sessions, CSRF and access control of the console, over real HTTP."""

from __future__ import annotations

import asyncio
import re

import aiohttp
import attrs
import openai
import pytest

from gateway_core.config import Config

from .conftest import csrf_of

pytestmark = pytest.mark.usefixtures("users")


async def test_signed_out_pages_redirect_to_sign_in(gateway, browsers):
    browser = await browsers()
    for path in ("/console/keys", "/console/logs", "/console/wallet", "/console/admin/users"):
        async with browser.http.get(gateway.url + path, allow_redirects=False) as response:
            assert response.status == 303, path
            assert response.headers["location"].startswith("/console/login?next=")


async def test_sign_in_sets_a_signed_http_only_lax_cookie_and_sign_out_ends_the_session(gateway, browsers, csrf):
    browser = await browsers()
    _, form = await browser.get("/console/login")
    data = {"csrf": csrf(form), "name": "alice", "password": "alice-password-1"}
    async with browser.http.post(gateway.url + "/console/login", data=data, allow_redirects=False) as response:
        assert response.status == 303 and response.headers["location"] == "/console/dashboard"
        set_cookie = next(h for h in response.headers.getall("set-cookie") if h.startswith("rg_session="))
    attributes = {part.strip().split("=")[0].lower() for part in set_cookie.split(";")}
    assert {"httponly", "samesite", "path", "max-age"} <= attributes
    assert "samesite=lax" in set_cookie.lower() and "path=/;" in set_cookie.lower()  # the management API reads it too
    stolen = set_cookie.split(";")[0].split("=", 1)[1]
    assert stolen.count(".") == 1  # token.signature
    async with browser.http.get(gateway.url + "/console/keys") as response:
        assert response.status == 200 and "alice" in await response.text()
        assert response.headers["cache-control"] == "no-store"
        assert "default-src 'none'" in response.headers["content-security-policy"]
    copied = {"Cookie": f"rg_session={stolen}"}
    async with aiohttp.ClientSession() as other:
        async with other.get(gateway.url + "/console/keys", headers=copied, allow_redirects=False) as response:
            assert response.status == 200
        status, page = await browser.post("/console/logout", {}, csrf_from="/console/keys")
        assert status == 200 and "You are signed out" in page
        # the old cookie is dead on the server too, not only forgotten by this client
        async with other.get(gateway.url + "/console/keys", headers=copied, allow_redirects=False) as response:
            assert response.status == 303


async def test_a_forged_cookie_is_refused(gateway, browsers):
    browser = await browsers("alice")
    real = next(c.value for c in browser.http.cookie_jar if c.key == "rg_session")
    token, _ = real.split(".")
    async with aiohttp.ClientSession() as http:
        for forged in ("abc.def", f"{token}.{'A' * 43}", f"{token[:-1]}x.{real.split('.')[1]}", token):
            async with http.get(gateway.url + "/console/keys", headers={"Cookie": f"rg_session={forged}"}, allow_redirects=False) as response:
                assert response.status == 303, forged
        async with http.get(gateway.url + "/console/keys", headers={"Cookie": f"rg_session={real}"}, allow_redirects=False) as response:
            assert response.status == 200


async def test_wrong_password_and_unknown_user_are_refused_alike(browsers):
    browser = await browsers()
    wrong = await browser.sign_in("alice", "not-her-password")
    unknown = await browser.sign_in("nobody", "whatever-password")
    for status, page in (wrong, unknown):
        assert status == 401 and "Wrong user name or password" in page and "Sign out" not in page


async def test_wrong_passwords_from_one_address_never_block_the_right_one_from_another(relaygate_config, users, start_gateway, browsers):
    config = attrs.evolve(relaygate_config, trusted_proxies=("127.0.0.1",))
    gateway = start_gateway(config)
    browser = await browsers(url=gateway.url)
    attacker, owner = {"X-Forwarded-For": "203.0.113.7"}, {"X-Forwarded-For": "198.51.100.20"}
    for _ in range(3):  # three free failures for root from the attacker's address
        assert (await browser.sign_in("root", "guess", headers=attacker))[0] == 401
    status, page = await browser.sign_in("root", headers=attacker)  # even the right password waits there
    assert status == 429 and "wait 1 second and try again" in page
    assert (await (await browsers(url=gateway.url)).sign_in("root", headers=owner))[0] == 200  # the admin is not locked out
    assert (await (await browsers(url=gateway.url)).sign_in("bob", headers=attacker))[0] == 200  # nor another account from there


async def test_sign_in_delays_grow_with_each_failure(relaygate_config, users, start_gateway, browsers):
    config = Config(db_path=relaygate_config.db_path, plugins={"console": {"signin_free_failures": 1}})
    browser = await browsers(url=start_gateway(config).url)
    waits = []
    for _ in range(3):
        assert (await browser.sign_in("alice", "guess"))[0] == 401
        waits.append(await retry_after(browser, "alice"))
        await asyncio.sleep(waits[-1] + 0.1)
    assert waits == [1, 2, 4]  # doubling with each failure past the free one


async def retry_after(browser, name: str) -> int:
    """The Retry-After of a throttled sign-in (the attempt is not counted)."""
    _, page = await browser.get("/console/login")
    form = {"csrf": csrf_of(page), "name": name, "password": "guess"}
    async with browser.http.post(browser.base + "/console/login", data=form) as response:
        assert response.status == 429
        return int(response.headers["Retry-After"])


async def test_posts_without_or_with_a_wrong_csrf_token_are_403(browsers, seed, users, csrf):
    browser = await browsers("alice")
    form = {"name": "sneaky", "group": "default"}
    assert (await browser.post("/console/keys/new", form))[0] == 403
    assert (await browser.post("/console/keys/new", {**form, "csrf": "wrong"}))[0] == 403
    bob = await browsers("bob")
    _, bobs_page = await bob.get("/console/keys")
    assert (await browser.post("/console/keys/new", {**form, "csrf": csrf(bobs_page)}))[0] == 403
    assert seed.rows("SELECT id FROM api_keys WHERE name = 'sneaky'") == []
    assert (await browser.post("/console/keys/new", form, csrf_from="/console/keys/new"))[0] == 200
    assert len(seed.rows("SELECT id FROM api_keys WHERE name = 'sneaky'")) == 1


async def test_sign_in_form_needs_its_token(gateway, browsers):
    browser = await browsers()
    await browser.get("/console/login")
    status, _ = await browser.post("/console/login", {"name": "alice", "password": "alice-password-1"})
    assert status == 403


async def test_the_secret_is_shown_once_and_never_again(openai_client, browsers, seed, users, gateway):
    browser = await browsers("alice")
    status, page = await browser.post("/console/keys/new", {"name": "ci", "group": "default", "quota": "2.50"}, csrf_from="/console/keys/new")
    assert status == 200 and "shown only this once" in page
    secret = re.search(r'<code id="secret">(sk-[^<]+)</code>', page).group(1)
    row = seed.rows("SELECT id, prefix, quota_micros FROM api_keys WHERE name = 'ci'")[0]
    assert row["quota_micros"] == 2_500_000
    for path in ("/console/keys", f"/console/keys/{row['id']}/edit", "/console/logs", "/console/quickstart"):
        _, other = await browser.get(path)
        assert secret not in other and secret[:20] not in other, path
    assert row["prefix"] in (await browser.get("/console/keys"))[1]
    client = openai_client(gateway.url, secret)
    reply = await client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content.endswith("You said: hi")


async def test_another_users_key_log_and_pages_are_not_found(browsers, seed, users):
    bob_key, _ = seed.key(users["bob"], name="bobs")
    conn = seed.store.connect()
    conn.execute(
        "INSERT INTO usage_logs (request_id, created_at, user_id, key_id, model, status) VALUES ('req_bob', 1, ?, ?, 'm', 200)",
        (users["bob"], bob_key),
    )
    conn.commit()
    log_id = conn.execute("SELECT id FROM usage_logs WHERE request_id = 'req_bob'").fetchone()[0]
    conn.close()
    alice = await browsers("alice")
    assert (await alice.get(f"/console/keys/{bob_key}/edit"))[0] == 404
    assert (await alice.get(f"/console/logs/{log_id}"))[0] == 404
    for action in ("disable", "enable", "delete"):
        status, _ = await alice.post(f"/console/keys/{bob_key}/{action}", {}, csrf_from="/console/keys")
        assert status == 404, action
    status, _ = await alice.post(f"/console/keys/{bob_key}/edit", {"name": "mine now"}, csrf_from="/console/keys")
    assert status == 404
    assert seed.rows("SELECT name, enabled, deleted FROM api_keys WHERE id = ?", (bob_key,)) == [{"name": "bobs", "enabled": 1, "deleted": 0}]
    _, logs = await alice.get(f"/console/logs?key={bob_key}")
    assert "req_bob" not in logs
    bob = await browsers("bob")
    assert (await bob.get(f"/console/logs/{log_id}"))[0] == 200


ADMIN_GETS = ("/console/admin/channels", "/console/admin/channels/new", "/console/admin/users", "/console/admin/groups",
              "/console/admin/prices", "/console/admin/usage", "/console/admin/logs", "/console/admin/codes")  # fmt: skip


async def test_non_admins_get_403_on_every_admin_route(browsers, users, seed):
    alice = await browsers("alice")
    for path in ADMIN_GETS + (f"/console/admin/users/{users['bob']}", "/console/admin/logs/1"):
        status, page = await alice.get(path)
        assert status == 403 and "operators" in page, path
    posts = {
        "/console/admin/users": {"name": "mallory", "password": "12345678", "is_admin": "on"},
        f"/console/admin/users/{users['alice']}/topup": {"amount": "1000"},
        "/console/admin/prices": {"model": "x", "input": "0", "output": "0"},
        "/console/admin/groups": {"name": "vip", "ratio": "0"},
        "/console/admin/channels/new": {"name": "evil", "type": "demo", "models": "m"},
    }
    for path, form in posts.items():
        status, _ = await alice.post(path, form, csrf_from="/console/keys")
        assert status == 403, path
    assert seed.rows("SELECT count(*) AS n FROM users WHERE name = 'mallory'") == [{"n": 0}]
    assert seed.rows("SELECT balance_micros FROM users WHERE name = 'alice'") == [{"balance_micros": 10_000_000}]
    root = await browsers("root")
    for path in ADMIN_GETS:
        assert (await root.get(path))[0] == 200, path


async def test_values_are_escaped(browsers, seed, users):
    alice = await browsers("alice")
    name = '<script>alert("x")</script>'
    status, page = await alice.post("/console/keys/new", {"name": name, "group": "default"}, csrf_from="/console/keys/new")
    assert status == 200 and name not in page and "&lt;script&gt;" in page
    _, listing = await alice.get("/console/keys")
    assert name not in listing and "&lt;script&gt;alert" in listing
