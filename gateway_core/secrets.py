"""Secrets the gateway hands out or keeps: API keys and console passwords.

API keys are random (``sk-`` and 32 random bytes, URL-safe base64) and stored
only as their SHA-256 hash: a key is high-entropy, so a fast hash is enough and
keeps the lookup on the request path cheap. Passwords are low-entropy, so they
are hashed with scrypt (memory-hard), its parameters and salt kept in the
stored string so they can be raised later without breaking old hashes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets as _random

from .records import mask_secret

API_KEY_PREFIX = "sk-"
API_KEY_BYTES = 32
DISPLAY_CHARS = 4  # random characters shown after "sk-": 24 bits, never enough to guess

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_DKLEN = 32
SALT_BYTES = 16
_SCHEME = "scrypt"


def new_api_key() -> str:
    """A new API key secret: ``sk-`` followed by 32 random bytes, URL-safe base64."""
    return API_KEY_PREFIX + _random.token_urlsafe(API_KEY_BYTES)


def hash_key(secret: str) -> str:
    """The SHA-256 hex digest under which an API key is stored and looked up."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def key_prefix(secret: str) -> str:
    """A short form of a key to recognise it in lists (``sk-AbCd…``)."""
    shown = len(API_KEY_PREFIX) + DISPLAY_CHARS if secret.startswith(API_KEY_PREFIX) else DISPLAY_CHARS
    return secret[:shown] + "…"


def hash_password(password: str) -> str:
    """``scrypt$N$r$p$salt$hash`` (salt and hash in unpadded URL-safe base64)."""
    if not password:
        raise ValueError("password must not be empty")
    salt = _random.token_bytes(SALT_BYTES)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_DKLEN)
    return "$".join((_SCHEME, str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), _b64(salt), _b64(digest)))


def verify_password(password: str, stored: str | None) -> bool:
    """Whether ``password`` matches ``stored``; ``False`` for a missing or malformed hash."""
    if not stored or not password:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != _SCHEME:
            return False
        expected = _unb64(digest)
        actual = _scrypt(password, _unb64(salt), int(n), int(r), int(p), len(expected))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    maxmem = 128 * r * n * 2 + 1024 * 1024
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=dklen, maxmem=maxmem)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def redact(text: str, secret: str) -> str:
    """``text`` with ``secret`` (an upstream key an upstream may echo) masked."""
    if secret and len(secret) >= 6 and secret in text:
        return text.replace(secret, mask_secret(secret))
    return text
