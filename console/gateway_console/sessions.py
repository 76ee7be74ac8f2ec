"""Signed session cookies and CSRF tokens.

A session is a random token. The cookie carries ``token.signature`` (HMAC-SHA256
with the console's secret, kept in the database), so a forged or altered cookie
is refused without touching the database; the database keeps the session under
the SHA-256 of the token, with its user and expiry, so signing out (or
disabling the user) ends it for good. The CSRF token of a session is another
HMAC of that token: nothing more to store, and it never equals the cookie.

Before signing in there is no session: the sign-in form is protected by a
random nonce in its own short-lived cookie and the HMAC of that nonce in the form.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken

MOUNT_PATH = "/console"  # where the gateway mounts the console
SESSION_COOKIE = "rg_session"  # path: the gateway's root, so the management API reads it too
SIGNIN_COOKIE = "rg_signin"
REVEAL_COOKIE = "rg_reveal"  # a new secret on its way from the form's POST to the page that shows it once
CSRF_FIELD = "csrf"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def session_id(token: str) -> str:
    """What the database stores for a session token."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


class Signer:
    """HMAC-SHA256 signatures, each bound to a purpose so one cannot stand for another."""

    def __init__(self, secret: str) -> None:
        self._key = secret.encode("utf-8")

    def sign(self, value: str, purpose: str) -> str:
        mac = hmac.new(self._key, f"{purpose}\x00{value}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")

    def verify(self, value: str, purpose: str, signature: str) -> bool:
        return hmac.compare_digest(self.sign(value, purpose).encode(), signature.encode("utf-8", "replace"))

    # --- the session cookie ---------------------------------------------------

    def session_cookie(self, token: str) -> str:
        return f"{token}.{self.sign(token, 'session')}"

    def token_from_cookie(self, cookie: str | None) -> str | None:
        """The session token of a cookie whose signature is right, else ``None``."""
        if not cookie or cookie.count(".") != 1 or len(cookie) > 200:
            return None
        token, signature = cookie.split(".")
        return token if token and self.verify(token, "session", signature) else None

    # --- CSRF -----------------------------------------------------------------

    def csrf_token(self, token: str) -> str:
        return self.sign(token, "csrf")

    def check_csrf(self, token: str, given: str | None) -> bool:
        return bool(given) and self.verify(token, "csrf", given or "")

    def signin_csrf(self, nonce: str) -> str:
        return self.sign(nonce, "signin")

    def check_signin_csrf(self, nonce: str | None, given: str | None) -> bool:
        return bool(nonce) and bool(given) and self.verify(nonce or "", "signin", given or "")

    # --- a secret on its way to the page that shows it once ---------------------

    def seal(self, value: str, token: str) -> str:
        """``value`` encrypted for the session ``token`` alone (a key derived from
        the console's secret and the token): the cookie carrying it reads as
        nothing to anyone else, nor once the session is over."""
        return self._fernet(token).encrypt(value.encode("utf-8")).decode("ascii")

    def unseal(self, sealed: str | None, token: str, max_age: int) -> str | None:
        """What :meth:`seal` sealed for ``token`` at most ``max_age`` seconds ago, else ``None``."""
        if not sealed or len(sealed) > 4096:
            return None
        try:
            return self._fernet(token).decrypt(sealed.encode("ascii"), ttl=max_age).decode("utf-8")
        except (InvalidToken, UnicodeError, ValueError):
            return None

    def _fernet(self, token: str) -> Fernet:
        key = hmac.new(self._key, f"reveal\x00{token}".encode(), hashlib.sha256).digest()
        return Fernet(base64.urlsafe_b64encode(key))
