import pytest

from gateway_core.errors import AuthenticationError
from gateway_core.key_header import bearer_key, plain_key

KEY = "sk-abcDEF123_-x"


def test_bearer_key_accepts_exactly_bearer_space_key():
    assert bearer_key(f"Bearer {KEY}") == KEY


@pytest.mark.parametrize(
    "value, says",
    [
        (None, "No API key"),
        ("", "No API key"),
        (f"Basic {KEY}", "Bearer scheme"),
        (f"Token {KEY}", "Bearer scheme"),
        (KEY, "Bearer scheme"),
        (f"bearer {KEY}", "write the scheme as 'Bearer'"),
        ("Bearer", "no key after"),
        ("Bearer ", "no key after"),
        (f"Bearer  {KEY}", "malformed"),
        (f"Bearer\t{KEY}", "Bearer"),
        (f"Bearer {KEY[:5]} {KEY[5:]}", "malformed"),
        (f"Bearer {KEY[:5]}\n{KEY[5:]}", "malformed"),
        (f"Bearer {KEY[:5]}\r\n {KEY[5:]}", "malformed"),
    ],
)
def test_bearer_key_errors_say_what_is_wrong_without_echoing_the_key(value, says):
    with pytest.raises(AuthenticationError) as caught:
        bearer_key(value)
    assert says in caught.value.message
    assert KEY not in caught.value.message and KEY[5:] not in caught.value.message
    assert caught.value.status == 401


def test_plain_key():
    assert plain_key(KEY, "x-api-key") == KEY
    for bad in (f"{KEY} x", f"{KEY}\n", "sk-é"):
        with pytest.raises(AuthenticationError):
            plain_key(bad, "x-api-key")
    with pytest.raises(AuthenticationError, match="No API key"):
        plain_key(None, "x-api-key")
