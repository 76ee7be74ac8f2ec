"""Redis over TLS (``rediss://``): a redis-server of the test's own listening with
TLS only, on a certificate made for the test. Both connections the gateway makes
(the request path's scripts, ``resp.py``, and redis-py's for pub/sub, breakers and
sign-in) take the same URL and its TLS settings, and verify the server."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import openai
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from redis.exceptions import ConnectionError as RedisConnectionError

from gateway_core.config import Config, config_from_mapping
from gateway_core.ratelimit.state import Subject
from gateway_core.records import RateLimits
from gateway_core.testing import free_port
from gateway_openai.fake_upstream import FakeOpenAI
from relaygate_redis.limiter import RedisRateLimiter, connect
from relaygate_redis.resp import RespClient

MODEL = "gpt-tls"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A throwaway certificate for 127.0.0.1 and its key (the certificate is its own CA)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "relaygate test redis")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "redis.crt", directory / "redis.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


@attrs.define
class TlsRedis:
    port: int
    ca: Path

    def url(self, **query: str) -> str:
        params = "&".join(f"{name}={value}" for name, value in query.items())
        return f"rediss://127.0.0.1:{self.port}/0" + (f"?{params}" if params else "")

    @property
    def trusted(self) -> str:
        return self.url(ssl_ca_certs=str(self.ca))


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[TlsRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    cert, key = self_signed(tmp_path)
    port = free_port()
    command = ["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
               "--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert),
               "--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        ping = ["redis-cli", "--tls", "--cacert", str(cert), "-h", "127.0.0.1", "-p", str(port), "ping"]
        while subprocess.run(ping, capture_output=True, text=True).stdout.strip() != "PONG":
            if process.poll() is not None:
                pytest.skip("this redis-server was built without TLS")
            assert time.monotonic() < deadline, "redis-server did not start with TLS"
            time.sleep(0.05)
        yield TlsRedis(port, cert)
    finally:
        process.kill()
        process.wait(timeout=10)


async def test_both_connections_verify_the_server_and_count_over_tls(tls_redis):
    client = RespClient(tls_redis.trusted)
    limiter = RedisRateLimiter(client, prefix="tls")
    try:
        subjects = [Subject("key", 1, RateLimits(requests_per_minute=2))]
        permits = [await limiter.acquire(subjects, 0) for _ in range(2)]
        assert [p.state.requests.remaining for p in permits if p.state.requests] == [1, 0]
        pubsub = connect(tls_redis.trusted)
        try:
            assert await pubsub.ping()
            assert await pubsub.exists("tls:rl:key:1") == 1  # what the scripts wrote, read over redis-py's TLS
        finally:
            await pubsub.aclose()
    finally:
        await limiter.close()
        await client.close()


async def test_a_server_certificate_not_trusted_is_refused(tls_redis):
    client = RespClient(tls_redis.url())  # the system's CAs only: the test's certificate is unknown
    with pytest.raises(RedisConnectionError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        await client.ping()
    await client.close()
    pubsub = connect(tls_redis.url())
    try:
        with pytest.raises(RedisConnectionError):
            await pubsub.ping()
    finally:
        await pubsub.aclose()
    unverified = RespClient(tls_redis.url(ssl_cert_reqs="none"))  # asked for explicitly
    await unverified.ping()
    await unverified.close()


@pytest.fixture
def relaygate_config(tmp_path: Path, tls_redis: TlsRedis) -> Config:
    gateway = {"redis": tls_redis.trusted, "redis_prefix": "tls-gateway"}
    return config_from_mapping({"load": ["openai", "demo"], "gateway": gateway}, db_path=str(tmp_path / "relaygate.db"))


async def test_a_gateway_on_rediss_shares_limits_and_hears_invalidations(start_gateway, seed, fake_upstream):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL], concurrency=5)
    _, key = seed.key(seed.user("alice"), limits={"rpm": 2})
    a, b = start_gateway(), start_gateway()
    for gateway in (a, b):
        shared = gateway.services.shared
        assert shared is not None

        async def subscribed(bus=shared.bus) -> bool:
            return bus.connected.is_set()

        deadline = time.monotonic() + 10
        while not await gateway.on_loop(subscribed()):  # pub/sub over TLS
            assert time.monotonic() < deadline, "the subscriber did not connect over TLS"
            await asyncio.sleep(0.05)
    statuses = []
    for gateway in (a, b, a):
        async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0) as client:
            try:
                await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
                statuses.append(200)
            except openai.APIStatusError as error:
                statuses.append(error.status_code)
    assert statuses == [200, 200, 429]  # one count over TLS, whichever gateway answered
