"""The records of the management API's own data: personal access tokens, the
audit log of writes, and a credit recorded under an idempotency key."""

from __future__ import annotations

from typing import Any

import attrs

TOKEN_PREFIX = "rgt-"  # a personal access token; relay API keys start with "sk-"
SCOPES = ("read", "write", "admin")  # each scope allows what the ones before it allow


@attrs.frozen
class AccessTokenRecord:
    """A personal access token (its secret is stored only hashed)."""

    id: int
    user_id: int
    user_name: str
    name: str
    scope: str
    prefix: str
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    last_used_at: float | None
    user_enabled: bool = True
    user_is_admin: bool = False

    def usable(self, now: float) -> bool:
        """Not revoked, not expired, and its user is enabled."""
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now) and self.user_enabled


@attrs.frozen
class Actor:
    """Who made a change: a user through a token or a console session, or an
    operator at the command line (``via == "cli"``, no user)."""

    via: str  # "token", "session" or "cli"
    user_id: int | None = None
    user_name: str | None = None
    token_id: int | None = None
    request_id: str | None = None


@attrs.frozen
class AuditEntry:
    """One write: who, through what, which action on which record, the record
    before and after (``None`` when it did not exist), and when."""

    id: int
    created_at: float
    via: str
    user_id: int | None
    user_name: str | None
    token_id: int | None
    request_id: str | None
    action: str  # "key.update", "wallet.topup", ...
    target: str  # "key 7", "user 3"
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@attrs.frozen
class Credit:
    """A top-up or an adjustment as recorded: its ledger row, the balance after,
    and whether it was recorded earlier under the same idempotency key
    (``replayed``: nothing moved this time)."""

    ledger_id: int
    user_id: int
    kind: str
    amount_micros: int
    balance_after_micros: int
    note: str | None
    idempotency_key: str | None
    created_at: float
    replayed: bool = False
