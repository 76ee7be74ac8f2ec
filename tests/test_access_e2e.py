"""Who may call what, over real HTTP: key headers (well-formed and malformed, raw bytes
where HTTP clients refuse to send them), key states, expiry while the gateway runs,
the key cache's lifetime, IP allow lists with and without a trusted proxy, model
restriction versus group, and the body-size limit — checked with the openai SDK's
exception classes."""

from __future__ import annotations

import asyncio
import time

import attrs
import openai
import orjson
import pytest

from gateway_core.config import Config
from gateway_core.secrets import hash_key
from gateway_core.store import keys, users
from gateway_openai.fake_upstream import FakeOpenAI

MODEL = "gpt-test"
OTHER = "gpt-other"
VIP_MODEL = "gpt-vip"
CHAT = [{"role": "user", "content": "hi"}]


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    """Only the plugins these tests speak through (others may be mid-change)."""
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai", "demo"))


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def alice(seed, upstream):
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL, OTHER])
    seed.channel("vip", type="openai", base_url=upstream.url, models=[VIP_MODEL], groups=["vip"])
    for model in (MODEL, OTHER, VIP_MODEL):
        seed.price(model, 0, 0, free=True)  # billing is not what these tests are about
    return seed.user("alice", groups=["default", "vip"])


@pytest.fixture
def secret(seed, alice):
    return seed.key(alice)[1]


def client(gateway, key, **headers) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0, default_headers=headers or None)


async def chat(gateway, key, model=MODEL, **headers):
    return await client(gateway, key, **headers).chat.completions.create(model=model, messages=CHAT)


async def raw_request(port: int, head: bytes, body: bytes = b"") -> tuple[int, dict[str, str], dict]:
    """Send exactly these bytes (request line and headers) and read the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + b"\r\n" + body)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
    header_block, _, payload = data.partition(b"\r\n\r\n")
    lines = header_block.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        payload = _unchunk(payload)
    return status, headers, orjson.loads(payload) if payload else {}


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out


def models_request(authorization: bytes | None) -> bytes:
    head = b"GET /v1/models HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n"
    if authorization is not None:
        head += b"Authorization: " + authorization + b"\r\n"
    return head


# --- where the key comes from ------------------------------------------------------------


async def test_bearer_key_through_the_sdk(start_gateway, secret):
    gateway = start_gateway()
    completion = await chat(gateway, secret)
    assert completion.choices[0].message.content == "echo: hi"


@pytest.mark.parametrize(
    "authorization, says, code",
    [
        (None, "No API key provided", "missing_api_key"),
        (b"Bearer", "no key after 'Bearer'", "missing_api_key"),
        (b"Bearer   ", "no key after 'Bearer'", "missing_api_key"),  # trailing whitespace is not part of the value
        (b"Bearer  {key}", "2 spaces between 'Bearer' and the key", "invalid_authorization_header"),
        (b"Bearer\t{key}", "a tab between 'Bearer' and the key", "invalid_authorization_header"),
        (b"Bearer {head}\r\n {tail}", "is malformed: it contains spaces", "malformed_api_key"),  # key folded across lines
        (b"Bearer {head} {tail}", "is malformed: it contains spaces", "malformed_api_key"),
        (b"Bearer {head}\t{tail}", "is malformed: it contains spaces", "malformed_api_key"),
        (b"bearer {key}", "write the scheme as 'Bearer'", "invalid_authorization_header"),
        (b"Basic {key}", "must use the Bearer scheme", "invalid_authorization_header"),
        (b"Token {key}", "must use the Bearer scheme", "invalid_authorization_header"),
        (b"{key}", "must use the Bearer scheme", "invalid_authorization_header"),
        (b"Bearer {head}\xe9{tail}", "characters no key has", "malformed_api_key"),
    ],
)
async def test_malformed_authorization_headers_are_401s_that_say_what_is_wrong(start_gateway, secret, authorization, says, code):
    gateway = start_gateway()
    if authorization is not None:
        raw = secret.encode()
        authorization = authorization.replace(b"{key}", raw).replace(b"{head}", raw[:10]).replace(b"{tail}", raw[10:])
    status, headers, body = await raw_request(gateway.port, models_request(authorization))
    assert status == 401, body
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert says in error["message"] and error["code"] == code
    assert secret[10:] not in orjson.dumps(body).decode()
    assert headers["x-request-id"].startswith("req_")


async def test_the_well_formed_raw_header_passes(start_gateway, secret):
    gateway = start_gateway()
    status, _, body = await raw_request(gateway.port, models_request(b"Bearer " + secret.encode()))
    assert status == 200 and body["object"] == "list"
    # whitespace around a value is not part of it in HTTP
    status, _, _ = await raw_request(gateway.port, models_request(b"  Bearer " + secret.encode() + b" \t"))
    assert status == 200
    # an obs-fold between the scheme and the key is one space once HTTP unfolds it (RFC 9112, 5.2)
    status, _, _ = await raw_request(gateway.port, models_request(b"Bearer\r\n " + secret.encode()))
    assert status == 200


# --- key states ------------------------------------------------------------------------------


async def test_each_key_state_is_its_own_401(start_gateway, seed, alice):
    (_, live), (disabled_id, disabled), (deleted_id, deleted) = (seed.key(alice, name=n) for n in ("live", "off", "gone"))
    expired_id, expired = seed.key(alice, name="old", expires_at=time.time() + 0.5)
    bob = seed.user("bob")
    _, bobs = seed.key(bob)
    seed._write(keys.set_key_enabled, disabled_id, False)
    seed._write(keys.delete_key, deleted_id)
    seed._write(users.set_user_enabled, bob, False)
    time.sleep(0.6)
    gateway = start_gateway()
    await chat(gateway, live)
    expected = {
        "sk-" + "x" * 43: "Incorrect API key provided",
        disabled: "This API key is disabled",
        deleted: "This API key has been deleted",
        expired: "This API key expired at",
        bobs: "The account that owns this API key is disabled",
    }
    for key, says in expected.items():
        with pytest.raises(openai.AuthenticationError) as caught:
            await chat(gateway, key)
        assert caught.value.status_code == 401
        assert says in caught.value.message, caught.value.message
        assert key not in caught.value.message
    assert upstream_free_of(seed, {disabled, deleted, expired, bobs})


def upstream_free_of(seed, secrets) -> bool:
    """Refused requests never reached a channel."""
    rows = seed.rows("SELECT status, channel_id FROM usage_logs WHERE status = 401")
    return len(rows) >= len(secrets) and all(row["channel_id"] is None for row in rows)


async def test_a_key_expiring_while_the_gateway_runs_stops_working(start_gateway, seed, alice, upstream):
    expires_at = time.time() + 1.2
    _, secret = seed.key(alice, expires_at=expires_at)
    gateway = start_gateway()
    await chat(gateway, secret)  # its record is cached now, for a second
    await asyncio.sleep(expires_at - time.time() + 0.05)
    with pytest.raises(openai.AuthenticationError, match="expired at"):
        await chat(gateway, secret)
    assert len(upstream.requests) == 1


async def test_other_processes_changes_are_seen_within_the_key_cache_lifetime(start_gateway, seed, alice):
    key_id, secret = seed.key(alice)
    gateway = start_gateway()
    await chat(gateway, secret)
    seed._write(keys.set_key_enabled, key_id, False)  # as the CLI would, from another process
    changed = time.monotonic()
    while True:
        started = time.monotonic()
        try:
            await client(gateway, secret).models.list()
        except openai.AuthenticationError as error:
            assert "disabled" in error.message
            break
        # the key was cached before the change: an entry lives one second, so a request
        # begun later than that reads the store (its start, not its end, is what counts:
        # on a busy machine a request itself may take a while)
        assert started - changed < 1.2, "a request begun after the cache lifetime still saw the key enabled"
        await asyncio.sleep(0.05)


async def test_changes_made_in_the_process_apply_at_once(start_gateway, seed, alice):
    key_id, secret = seed.key(alice)
    gateway = start_gateway()
    await chat(gateway, secret)
    seed._write(keys.set_key_enabled, key_id, False)
    await on_gateway_loop(gateway, lambda: gateway.services.keys.invalidate_key(key_id))
    with pytest.raises(openai.AuthenticationError, match="disabled"):
        await chat(gateway, secret)
    seed._write(keys.set_key_enabled, key_id, True)
    seed._write(users.set_user_enabled, alice, False)
    await on_gateway_loop(gateway, lambda: gateway.services.keys.invalidate_user(alice))
    with pytest.raises(openai.AuthenticationError, match="account that owns"):
        await chat(gateway, secret)


async def on_gateway_loop(gateway, fn) -> None:
    """Run ``fn`` on the gateway's own event loop (the caches are not thread-safe)."""
    done = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()

    def run():
        fn()
        loop.call_soon_threadsafe(done.set_result, None)

    gateway._loop.call_soon_threadsafe(run)
    await asyncio.wait_for(done, 5)


def test_the_key_cache_is_keyed_by_hash(seed, alice):
    _, secret = seed.key(alice)
    assert seed._write(keys.find_key, hash_key(secret)).name == "test"


# --- IP allow lists ----------------------------------------------------------------------------


async def test_ip_allow_list_without_a_trusted_proxy_uses_the_socket_address(start_gateway, seed, alice):
    _, local = seed.key(alice, name="local", allow_ips=["127.0.0.0/8", "2001:db8::/32"])
    _, remote = seed.key(alice, name="remote", allow_ips=["10.0.0.0/8", "2001:db8::/32"])
    gateway = start_gateway()
    await chat(gateway, local)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        await chat(gateway, remote)
    assert "127.0.0.1" in caught.value.message and caught.value.code == "ip_not_allowed"
    # a forwarded address from an untrusted peer counts for nothing
    for forwarded in ({"X-Forwarded-For": "10.1.2.3"}, {"Forwarded": "for=10.1.2.3"}):
        with pytest.raises(openai.PermissionDeniedError, match="127.0.0.1"):
            await chat(gateway, remote, **forwarded)


async def test_ip_allow_list_behind_a_trusted_proxy(start_gateway, relaygate_config, seed, alice, upstream):
    _, v4 = seed.key(alice, name="v4", allow_ips=["10.0.0.0/8", "192.0.2.7"])
    _, v6 = seed.key(alice, name="v6", allow_ips=["2001:db8::/32"])
    gateway = start_gateway(attrs.evolve(relaygate_config, trusted_proxies=("127.0.0.1",)))
    await chat(gateway, v4, **{"X-Forwarded-For": "10.1.2.3"})
    await chat(gateway, v4, **{"X-Forwarded-For": "192.0.2.7"})
    await chat(gateway, v4, **{"Forwarded": "for=10.20.30.40:5555;proto=https"})
    await chat(gateway, v6, **{"X-Forwarded-For": "2001:db8::5"})
    await chat(gateway, v6, **{"Forwarded": 'for="[2001:db8:1::7]:4711"'})
    refusals = [
        (v4, {"X-Forwarded-For": "192.0.2.8"}, "192.0.2.8"),
        (v4, {"X-Forwarded-For": "2001:db8::5"}, "2001:db8::5"),
        (v6, {"X-Forwarded-For": "2001:db9::1"}, "2001:db9::1"),
        (v6, {"Forwarded": 'for="[2001:dead::1]"'}, "2001:dead::1"),
        (v4, {}, "127.0.0.1"),  # no forwarded header: the proxy's own address
        # a client cannot smuggle an allowed address in front of its own
        (v4, {"X-Forwarded-For": "10.0.0.1, 203.0.113.9"}, "203.0.113.9"),
    ]
    for key, headers, seen in refusals:
        with pytest.raises(openai.PermissionDeniedError) as caught:
            await chat(gateway, key, **headers)
        assert f"from {seen}." in caught.value.message
    assert len(upstream.requests) == 5


# --- models: restriction versus group ---------------------------------------------------------------


async def test_model_restriction_versus_group(start_gateway, seed, alice, upstream, relaygate_config):
    _, restricted = seed.key(alice, name="restricted", models=[MODEL, VIP_MODEL])
    _, vip = seed.key(alice, name="vip", group="vip")
    gateway = start_gateway()  # the spec's 403 is the default
    assert [m.id for m in (await client(gateway, restricted).models.list()).data] == [MODEL]
    assert [m.id for m in (await client(gateway, vip).models.list()).data] == [VIP_MODEL]
    await chat(gateway, restricted, MODEL)
    await chat(gateway, vip, VIP_MODEL)

    with pytest.raises(openai.PermissionDeniedError) as caught:  # served to the group, not in the key's list
        await chat(gateway, restricted, OTHER)
    assert caught.value.code == "model_not_allowed" and f"'{OTHER}'" in caught.value.message
    assert "restricted" in caught.value.message and "GET /v1/models" in caught.value.message
    with pytest.raises(openai.PermissionDeniedError) as caught:  # in the key's list, but not served to its group
        await chat(gateway, restricted, VIP_MODEL)
    assert f"'{VIP_MODEL}'" in caught.value.message and "group 'default'" in caught.value.message
    with pytest.raises(openai.PermissionDeniedError, match="group 'vip'"):
        await chat(gateway, vip, MODEL)
    for unknown in ("no-such-model", "GPT-TEST", "gpt_test"):  # exact, case-sensitive names
        with pytest.raises(openai.BadRequestError) as caught:
            await chat(gateway, restricted, unknown)
        assert caught.value.code == "model_not_found" and f"'{unknown}'" in caught.value.message
        assert "GET /v1/models" in caught.value.message
    assert len(upstream.requests) == 2


async def test_hidden_a_model_of_another_group_answers_as_an_unknown_one(start_gateway, seed, alice, upstream, relaygate_config):
    """With hide_forbidden_models a key cannot tell a model that exists in a group it
    cannot use from one that does not exist: same status, code and message (only the
    name differs)."""
    _, restricted = seed.key(alice, name="restricted", models=[MODEL, VIP_MODEL])
    _, vip = seed.key(alice, name="vip", group="vip")
    gateway = start_gateway(attrs.evolve(relaygate_config, hide_forbidden_models=True))
    answers = []
    for key, model in ((restricted, OTHER), (restricted, VIP_MODEL), (vip, MODEL), (vip, "no-such-model"), (restricted, "no-such-model")):
        with pytest.raises(openai.BadRequestError) as caught:
            await chat(gateway, key, model)
        assert caught.value.code == "model_not_found"
        answers.append(caught.value.body["message"].replace(f"'{model}'", "'M'"))
    assert answers == ["The model 'M' was not found or is not permitted for this key. GET /v1/models lists the models your key may use."] * 5
    assert upstream.requests == []


# --- body size --------------------------------------------------------------------------------------


async def test_a_body_over_the_limit_is_413_in_openai_shape(start_gateway, relaygate_config, secret, upstream):
    gateway = start_gateway(attrs.evolve(relaygate_config, max_body_bytes=2000))
    big = [{"role": "user", "content": "x" * 3000}]
    with pytest.raises(openai.APIStatusError) as caught:
        await client(gateway, secret).chat.completions.create(model=MODEL, messages=big)
    assert caught.value.status_code == 413
    assert caught.value.code == "request_too_large" and "2000 bytes" in caught.value.message

    # no Content-Length: the limit is enforced while reading (raw bytes, so that the whole
    # body is sent before the gateway answers and closes)
    chunk = b" " * 700
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(4)) + b"0\r\n\r\n"
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b"Authorization: Bearer " + secret.encode() + b"\r\n"
    )
    status, _, body = await raw_request(gateway.port, head, chunked)
    assert status == 413 and body["error"]["code"] == "request_too_large"
    await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT)  # small ones pass
    assert len(upstream.requests) == 1


def test_every_installed_protocol_renders_413_in_its_own_shape(tmp_path):
    from gateway_core.errors import RequestTooLargeError
    from gateway_core.runtime.plugins import collect

    error = RequestTooLargeError("The request body is larger than the limit of 10 bytes.")
    protocols = collect(Config(db_path=str(tmp_path / "x.db"))).protocols
    assert protocols
    for protocol in protocols:
        rendered = protocol.render_error(error, "req_1")
        assert rendered.status == 413, protocol.name
        assert b"10 bytes" in rendered.body
