"""Redemption codes: batches created by an operator, redeemed once by a user.

:func:`create_codes` returns the plain codes, the only time they exist outside
their owner's hands (the store keeps their hashes). :func:`redeem_code` credits
the code's value and opens its group in one transaction, or raises
:class:`RedeemRefused` saying why (``wrong``, ``used``, ``expired``,
``disabled``, or ``throttled``).

Attempts are throttled per user and per client address by the gateway's
redemption throttle (``services.redeem``: the sign-in throttle's counters,
:mod:`gateway_core.ratelimit.signin`, in their own namespace; in Redis when it
is configured, so every worker and replica counts the same attempts) under
:data:`REDEEM_RULE`: an attempt counts as a failure when it starts and is taken
back when the code is credited. An operator redeeming for a user (the CLI) is
not throttled.
"""

from __future__ import annotations

import secrets
import time

from ..billing.codes import REFUSALS, Redeemed, RedemptionCode, code_prefix, hash_code, new_code, normalize_code
from ..ratelimit.signin import SignInRule, SignInThrottle, SignInThrottled, SignInThrottleUnavailable
from .context import Admin
from .errors import Conflict, Invalid, NotFound
from .rules import check_amount
from .users import get_user

MAX_BATCH = 10_000
CODE_CHARS = 18  # RG + 16: a normalized code is this long


class RedeemRefused(Conflict):
    """A code that was not credited; ``reason`` says why (the CLI exits 1 with the message)."""

    def __init__(self, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry_after = retry_after


# five free failures per user (from any address) and ten per address (for any user),
# then a wait of 2 s doubling with each failure up to 15 minutes; forgotten 15 minutes
# after the last attempt
REDEEM_RULE = SignInRule(
    free_failures=5, address_free_failures=10, account_free_failures=5, base_delay=2.0, max_delay=900.0, window=900.0,
    account_everywhere=True,
)


async def create_codes(
    admin: Admin,
    *,
    count: int,
    value_micros: int,
    expires_at: float | None = None,
    group: str | None = None,
    note: str | None = None,
    batch: str | None = None,
) -> list[tuple[int, str]]:
    """Create ``count`` codes worth ``value_micros`` each, in ``batch`` (a new
    name from :func:`new_batch` by default); ``(id, code)`` pairs, the only copy of the codes."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_BATCH:
        raise Invalid(f"must be a whole number from 1 to {MAX_BATCH}, got {count!r}", "count")
    check_amount(value_micros, "value")
    now = time.time()
    if expires_at is not None and expires_at <= now:
        raise Invalid("must be in the future", "expires")
    if group is not None and group not in {g.name for g in await admin.store.list_groups()}:
        raise Invalid(f"{group!r} is not a group (create it with 'relaygate group set {group}')", "group")
    codes = [new_code() for _ in range(count)]
    batch = batch or new_batch()
    ids = await admin.store.create_codes(
        batch, [(hash_code(code), code_prefix(code)) for code in codes],
        value_micros=value_micros, group=group, expires_at=expires_at, note=note, now=now,
    )  # fmt: skip
    return list(zip(ids, codes))


def new_batch() -> str:
    """A fresh batch name."""
    return "b_" + secrets.token_hex(6)


async def list_codes(admin: Admin, *, batch: str | None = None, limit: int = 1000) -> list[RedemptionCode]:
    """Codes newest first, of one batch or all (never the codes themselves)."""
    return await admin.store.list_codes(batch, limit)


async def disable_code(admin: Admin, code_id: int) -> None:
    """Disable a code: it can no longer be redeemed (one already redeemed stays so)."""
    if not await admin.store.disable_code(code_id):
        raise NotFound(f"no redemption code with id {code_id}")


async def redeem_code(
    admin: Admin, user_id: int, code: str, *, address: str | None = None, throttle: SignInThrottle | None = None
) -> Redeemed:
    """Credit ``code`` to the user's wallet, once; :class:`RedeemRefused` says why not.
    ``throttle`` (the gateway's ``services.redeem``) counts the attempt for the user
    and ``address`` first."""
    await get_user(admin, user_id)
    account, place = f"redeem:{user_id}", address or f"user:{user_id}"
    if throttle is not None:
        try:
            await throttle.attempt(account, place, REDEEM_RULE)
        except SignInThrottled as wait:
            raise RedeemRefused(
                "throttled", f"Too many wrong codes: try again in {wait.retry_after} seconds.", retry_after=wait.retry_after
            ) from None
        except SignInThrottleUnavailable:
            raise RedeemRefused("throttled", "Codes cannot be checked right now: try again in a minute.", retry_after=60) from None
    result = None
    if len(normalize_code(code)) == CODE_CHARS:  # anything else cannot be a code
        result = await admin.store.redeem_code(user_id, hash_code(code), time.time())
    if isinstance(result, Redeemed):
        if throttle is not None:
            await throttle.succeeded(account, place)
        if result.group is not None:
            admin.caches.user_changed(user_id)
        return result
    reason = result or "wrong"
    raise RedeemRefused(reason, REFUSALS[reason])
