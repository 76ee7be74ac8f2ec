"""Reading an API key from request headers, strictly, with errors that say what is wrong.

Client protocols declare where their clients put the key and call these. The
messages describe the header, never the secret in it.
"""

from __future__ import annotations

from .errors import AuthenticationError

_WHITESPACE = (" ", "\t", "\r", "\n", "\v", "\f")


def bearer_key(value: str | None) -> str:
    """The key of ``Authorization: Bearer <key>``: exactly ``Bearer``, one space, the key."""
    if value is None or value == "":
        raise AuthenticationError(
            "No API key provided. Send it in the header 'Authorization: Bearer <key>'.",
            code="missing_api_key",
        )
    scheme, sep, key = value.partition(" ")
    if not sep and any(ws in value for ws in _WHITESPACE[1:]):
        scheme = value.split(None, 1)[0]
    if scheme != "Bearer":
        if scheme.lower() == "bearer":
            raise AuthenticationError(
                "The Authorization header is malformed: write the scheme as 'Bearer', then one space, then the key.",
                code="invalid_authorization_header",
            )
        raise AuthenticationError(
            "The Authorization header must use the Bearer scheme: 'Authorization: Bearer <key>'.",
            code="invalid_authorization_header",
        )
    if not sep or key.strip() == "":
        raise AuthenticationError(
            "The Authorization header has no key after 'Bearer'.", code="missing_api_key"
        )
    return plain_key(key, "Authorization")


def plain_key(value: str | None, header: str) -> str:
    """A key sent alone in a header (``x-api-key``, ``x-goog-api-key``) or a query parameter."""
    if value is None or value == "":
        raise AuthenticationError(f"No API key provided in '{header}'.", code="missing_api_key")
    if any(ws in value for ws in _WHITESPACE):
        raise AuthenticationError(
            f"The API key in '{header}' is malformed: it contains spaces, tabs or line breaks. "
            "Send the key as one unbroken string.",
            code="malformed_api_key",
        )
    if not value.isascii() or not value.isprintable():
        raise AuthenticationError(
            f"The API key in '{header}' is malformed: it contains characters no key has.",
            code="malformed_api_key",
        )
    return value
