"""How a bedrock channel's key authenticates its requests.

A channel key (sealed like every channel secret) is one of:

- ``ACCESS_KEY_ID:SECRET_ACCESS_KEY`` or ``ACCESS_KEY_ID:SECRET_ACCESS_KEY:SESSION_TOKEN``:
  IAM credentials; each request is signed with AWS Signature Version 4 for the
  service ``bedrock`` in the channel's region.
- ``aws:chain`` or ``aws:profile=NAME``: resolved by botocore into the credentials
  above before a request is signed (:mod:`gateway_bedrock.credentials`); this module
  never sees those keys.
- anything else (a Bedrock API key, ``ABSK…`` or ``bedrock-api-key-…``): sent as
  ``Authorization: Bearer …``.

The signer is written here, not botocore's ``SigV4Auth``: on an ``AWSRequest``
that one costs about 420 µs of CPU per request (its request and header objects,
URL parsing, twice over), more than half the gateway's own overhead per request;
this one costs about 20 µs, keeping each day's derived signing key. It signs
``content-type``, ``host`` and ``x-amz-date`` (and the session token), over the
path exactly as sent. The tests hold it to botocore: the fake Bedrock recomputes
every signature with ``SigV4Auth`` and refuses a wrong one, as Bedrock does.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
from urllib.parse import quote, urlsplit

import attrs

SERVICE = "bedrock"
ALGORITHM = "AWS4-HMAC-SHA256"
DEFAULT_PORTS = {"http": 80, "https": 443}


@attrs.frozen
class IamKey:
    access_key_id: str
    secret_access_key: str = attrs.field(repr=False)
    session_token: str | None = attrs.field(default=None, repr=False)


@functools.lru_cache(maxsize=256)
def parse_key(key: str) -> IamKey | None:
    """The IAM credentials a channel key holds, or ``None`` for a bearer key."""
    parts = key.strip().split(":")
    if len(parts) not in (2, 3) or not all(parts) or not parts[0].isalnum():
        return None
    return IamKey(*parts)


def auth_headers(
    key: str, *, method: str, url: str, region: str, content_type: str | None, body: bytes, now: dt.datetime | None = None
) -> dict[str, str]:
    """The headers that authenticate one request: a SigV4 signature over ``method``,
    ``url`` (exactly as sent), ``content_type`` (``None``: a request without one, a
    GET) and ``body``, or a bearer key."""
    iam = parse_key(key)
    if iam is None:
        return {"Authorization": f"Bearer {key.strip()}"}
    moment = now or dt.datetime.now(dt.timezone.utc)
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    split = urlsplit(url)
    headers = {"host": _host(split.scheme, split.netloc), "x-amz-date": stamp}
    if content_type is not None:
        headers["content-type"] = " ".join(content_type.split())
    if iam.session_token:
        headers["x-amz-security-token"] = iam.session_token
    names = sorted(headers)
    signed_names = ";".join(names)
    canonical = "\n".join((
        method.upper(), quote(split.path or "/", safe="/~"), _query(split.query),
        "".join(f"{name}:{headers[name]}\n" for name in names), signed_names, hashlib.sha256(body).hexdigest(),
    ))  # fmt: skip
    scope = f"{day}/{region}/{SERVICE}/aws4_request"
    to_sign = f"{ALGORITHM}\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    signature = hmac.new(_signing_key(iam.secret_access_key, day, region), to_sign.encode(), hashlib.sha256).hexdigest()
    out = {
        "Authorization": f"{ALGORITHM} Credential={iam.access_key_id}/{scope}, SignedHeaders={signed_names}, Signature={signature}",
        "X-Amz-Date": stamp,
    }
    if iam.session_token:
        out["X-Amz-Security-Token"] = iam.session_token
    return out


@functools.lru_cache(maxsize=64)
def _signing_key(secret: str, day: str, region: str) -> bytes:
    key = f"AWS4{secret}".encode()
    for part in (day, region, SERVICE, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def _host(scheme: str, netloc: str) -> str:
    """The Host header as sent: the port only when it is not the scheme's default."""
    host, colon, port = netloc.rpartition(":")
    if colon and port.isdigit() and "]" not in port and DEFAULT_PORTS.get(scheme.lower()) == int(port):
        return host
    return netloc


def _query(query: str) -> str:
    """The canonical query of an already-quoted query string: its pairs sorted."""
    if not query:
        return ""
    pairs = sorted(part.partition("=")[::2] for part in query.split("&"))
    return "&".join(f"{name}={value}" for name, value in pairs)
