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
    if value.startswith("Bearer ") and len(value) > 7 and value[7] not in _WHITESPACE:
        return plain_key(value[7:], "Authorization")  # the well-formed case, quickly
    end = 0
    while end < len(value) and value[end] not in _WHITESPACE:
        end += 1
    scheme = value[:end]
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
    start = end
    while start < len(value) and value[start] in _WHITESPACE:
        start += 1
    separator, key = value[end:start], value[start:]
    if not key:
        raise AuthenticationError("The Authorization header has no key after 'Bearer'.", code="missing_api_key")
    if separator != " ":
        raise AuthenticationError(
            f"The Authorization header is malformed: {_describe(separator)} between 'Bearer' and the key; "
            "write exactly one space.",
            code="invalid_authorization_header",
        )
    return plain_key(key, "Authorization")


def _describe(separator: str) -> str:
    if "\r" in separator or "\n" in separator:
        return "it has a line break"
    if "\t" in separator:
        return "it has a tab"
    return f"it has {len(separator)} spaces" if separator.count(" ") == len(separator) else "it has other whitespace"


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
