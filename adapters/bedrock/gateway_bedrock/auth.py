"""How a bedrock channel's key authenticates its requests.

A channel key (sealed like every channel secret) is one of:

- ``ACCESS_KEY_ID:SECRET_ACCESS_KEY`` or ``ACCESS_KEY_ID:SECRET_ACCESS_KEY:SESSION_TOKEN``:
  IAM credentials; each request is signed with AWS Signature Version 4 for the
  service ``bedrock`` in the channel's region.
- anything else (a Bedrock API key, ``ABSK…`` or ``bedrock-api-key-…``): sent as
  ``Authorization: Bearer …``.

Signing uses botocore's ``SigV4Auth`` on an ``AWSRequest``: pure computation (two
SHA-256 digests and five HMACs, no I/O; about 50 µs a request, see
docs/adapters/bedrock.md). Credentials are parsed once per key and kept; no
credential chain (environment, profile files, instance metadata) is consulted,
since those read files or call the network.
"""

from __future__ import annotations

import functools

import attrs
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

SERVICE = "bedrock"
# headers of the request that are signed: the rest (the operator's own, trace context) may change on the way
SIGNED = ("content-type", "accept")


@attrs.frozen
class IamKey:
    access_key_id: str
    secret_access_key: str = attrs.field(repr=False)
    session_token: str | None = attrs.field(default=None, repr=False)


def is_iam_key(key: str) -> bool:
    return parse_key(key) is not None


@functools.lru_cache(maxsize=256)
def parse_key(key: str) -> IamKey | None:
    """The IAM credentials a channel key holds, or ``None`` for a bearer key."""
    parts = key.strip().split(":")
    if len(parts) not in (2, 3) or not all(parts) or not parts[0].isalnum():
        return None
    return IamKey(*parts)


def auth_headers(key: str, *, method: str, url: str, region: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
    """The headers that authenticate one request: a SigV4 signature over ``method``,
    ``url`` (exactly as sent), the ``SIGNED`` ``headers`` and ``body``, or a bearer key."""
    iam = parse_key(key)
    if iam is None:
        return {"Authorization": f"Bearer {key.strip()}"}
    credentials = ReadOnlyCredentials(iam.access_key_id, iam.secret_access_key, iam.session_token)
    signed = {name: value for name, value in headers.items() if name.lower() in SIGNED}
    request = AWSRequest(method=method, url=url, data=body, headers=signed)
    SigV4Auth(credentials, SERVICE, region).add_auth(request)
    out = {"Authorization": request.headers["Authorization"], "X-Amz-Date": request.headers["X-Amz-Date"]}
    if iam.session_token:
        out["X-Amz-Security-Token"] = iam.session_token
    return out
