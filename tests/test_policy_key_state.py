"""The key-state policy: deleted, disabled, expired keys and disabled owners are 401s
with their own messages; expiry is checked against the clock on every request."""

import time

import pytest

from gateway_core.errors import AuthenticationError
from gateway_core.policies.key_state import KeyState
from gateway_core.testing import make_context, make_key_record


async def admit(**fields):
    ctx = make_context(key=make_key_record(**fields))
    await KeyState().admit(ctx, None)


async def test_an_enabled_key_passes():
    await admit()
    await admit(expires_at=time.time() + 60)


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"deleted": True, "enabled": False}, "has been deleted"),
        ({"enabled": False}, "is disabled"),
        ({"expires_at": time.time() - 1}, "expired at"),
        ({"user_enabled": False}, "account that owns this API key is disabled"),
    ],
)
async def test_each_state_is_a_401_with_its_own_message(fields, says):
    with pytest.raises(AuthenticationError) as caught:
        await admit(**fields)
    assert caught.value.status == 401
    assert says in caught.value.message


async def test_expiry_is_checked_against_the_clock_not_when_the_key_was_read():
    key = make_key_record(expires_at=time.time() + 0.2)
    policy = KeyState()
    await policy.admit(make_context(key=key), None)
    time.sleep(0.25)
    with pytest.raises(AuthenticationError, match="expired"):
        await policy.admit(make_context(key=key), None)  # the same (cached) record
