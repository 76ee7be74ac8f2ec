"""Credits with an idempotency key: a top-up or a signed adjustment that a
retried payment webhook or script may send twice and that moves money once.

The key is stored with the ledger row in one transaction (see the stores'
``credit``); the same key again returns the first credit, marked ``replayed``;
the same key for a different user, amount or kind is a ``Conflict``.
"""

from __future__ import annotations

from ..store.access_records import Credit
from .context import Admin
from .errors import Invalid
from .rules import check_amount
from .users import get_user

MAX_KEY = 200
MAX_NOTE = 1000


async def credit(
    admin: Admin, user_id: int, amount_micros: int, *, kind: str, note: str | None = None, idempotency_key: str | None = None
) -> Credit:
    """A ``topup`` (a positive amount) or an ``adjustment`` (signed, non-zero,
    with a note saying why) of a user's balance."""
    check_amount(amount_micros, "amount", signed=kind == "adjustment")
    if kind == "adjustment":
        if not note or not note.strip():
            raise Invalid("must say why", "note")
    elif kind != "topup":
        raise Invalid(f"must be topup or adjustment, not {kind!r}", "kind")
    if note is not None and len(note) > MAX_NOTE:
        raise Invalid(f"must be at most {MAX_NOTE} characters", "note")
    if idempotency_key is not None and not 0 < len(idempotency_key) <= MAX_KEY:
        raise Invalid(f"must have 1 to {MAX_KEY} characters", "idempotency_key")
    await get_user(admin, user_id)
    return await admin.store.credit(user_id, amount_micros, kind=kind, note=note, idempotency_key=idempotency_key)
