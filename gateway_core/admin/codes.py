"""Redemption codes: batches created by an operator, redeemed once by a user.

:func:`create_codes` returns the plain codes, the only time they exist outside
their owner's hands (the store keeps their hashes). :func:`redeem_code` credits
the code's value and opens its group in one transaction, or raises
:class:`RedeemRefused` saying why (``wrong``, ``used``, ``expired``,
``disabled``, or ``throttled``). A user's (or an address's) failed attempts are
throttled with a :class:`RedeemThrottle` the front keeps (the console, the API);
an operator redeeming for a user (the CLI) is not throttled.
"""

from __future__ import annotations

import math
import secrets
import time

from ..billing.codes import REFUSALS, Redeemed, RedemptionCode, code_prefix, hash_code, new_code, normalize_code
from ..throttle import SlidingWindow
from .context import Admin
from .errors import Conflict, Invalid, NotFound
from .users import get_user

MAX_BATCH = 10_000
CODE_CHARS = 18  # RG + 16: a normalized code is this long


class RedeemRefused(Conflict):
    """A code that was not credited; ``reason`` says why (the CLI exits 1 with the message)."""

    def __init__(self, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry_after = retry_after


class RedeemThrottle:
    """Failed redemption attempts, at most ``per_user`` per user and ``per_address``
    per client address in ``window`` seconds (in this process's memory)."""

    def __init__(self, per_user: int = 5, per_address: int = 10, window: float = 900.0) -> None:
        self.users = SlidingWindow(per_user, window)
        self.addresses = SlidingWindow(per_address, window)

    def retry_after(self, user_id: int, address: str | None) -> float:
        waits = [self.users.retry_after(str(user_id))]
        if address:
            waits.append(self.addresses.retry_after(address))
        return max(waits)

    def failed(self, user_id: int, address: str | None) -> None:
        self.users.add(str(user_id))
        if address:
            self.addresses.add(address)


async def create_codes(
    admin: Admin,
    *,
    count: int,
    value_micros: int,
    expires_at: float | None = None,
    group: str | None = None,
    note: str | None = None,
) -> list[tuple[int, str]]:
    """Create ``count`` codes worth ``value_micros`` each; ``(id, code)`` pairs, the only copy of the codes."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_BATCH:
        raise Invalid(f"must be a whole number from 1 to {MAX_BATCH}, got {count!r}", "count")
    if isinstance(value_micros, bool) or not isinstance(value_micros, int) or value_micros <= 0:
        raise Invalid(f"must be a positive amount, got {value_micros!r}", "value")
    now = time.time()
    if expires_at is not None and expires_at <= now:
        raise Invalid("must be in the future", "expires")
    if group is not None and group not in {g.name for g in await admin.store.list_groups()}:
        raise Invalid(f"{group!r} is not a group (create it with 'relaygate group set {group}')", "group")
    codes = [new_code() for _ in range(count)]
    batch = "b_" + secrets.token_hex(6)
    ids = await admin.store.create_codes(
        batch, [(hash_code(code), code_prefix(code)) for code in codes],
        value_micros=value_micros, group=group, expires_at=expires_at, note=note, now=now,
    )  # fmt: skip
    return list(zip(ids, codes))


async def list_codes(admin: Admin, *, batch: str | None = None, limit: int = 1000) -> list[RedemptionCode]:
    """Codes newest first, of one batch or all (never the codes themselves)."""
    return await admin.store.list_codes(batch, limit)


async def disable_code(admin: Admin, code_id: int) -> None:
    """Disable a code: it can no longer be redeemed (one already redeemed stays so)."""
    if not await admin.store.disable_code(code_id):
        raise NotFound(f"no redemption code with id {code_id}")


async def redeem_code(
    admin: Admin, user_id: int, code: str, *, address: str | None = None, throttle: RedeemThrottle | None = None
) -> Redeemed:
    """Credit ``code`` to the user's wallet, once; :class:`RedeemRefused` says why not."""
    await get_user(admin, user_id)
    if throttle is not None:
        wait = throttle.retry_after(user_id, address)
        if wait > 0:
            raise RedeemRefused(
                "throttled", f"Too many wrong codes: try again in {math.ceil(wait)} seconds.", retry_after=wait
            )
    result = None
    if len(normalize_code(code)) == CODE_CHARS:  # anything else cannot be a code
        result = await admin.store.redeem_code(user_id, hash_code(code), time.time())
    if isinstance(result, Redeemed):
        if result.group is not None:
            admin.caches.user_changed(user_id)
        return result
    reason = result or "wrong"
    if throttle is not None:
        throttle.failed(user_id, address)
    raise RedeemRefused(reason, REFUSALS[reason])
