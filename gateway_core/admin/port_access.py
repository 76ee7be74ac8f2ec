"""The admin port's part for the management API: personal access tokens, the
audit log, roles and idempotent credits (see :mod:`.port` for the rules every
method follows). Both stores implement it with the rest of the port."""

from __future__ import annotations

from typing import Any, Protocol

from ..store.access_records import AccessTokenRecord, AuditEntry, Credit


class AccessStore(Protocol):
    async def create_token(self, user_id: int, *, name: str, scope: str, expires_at: float | None) -> tuple[AccessTokenRecord, str]:
        """Create a token; the token and its secret (stored only hashed: shown once)."""

    async def get_token(self, token_id: int) -> AccessTokenRecord | None: ...

    async def find_token(self, token_hash: str) -> AccessTokenRecord | None:
        """The token stored under ``token_hash``, revoked or not, with its user's state."""

    async def list_tokens(self, user_id: int | None) -> list[AccessTokenRecord]:
        """A user's tokens (everyone's for ``None``), oldest first."""

    async def touch_token(self, token_id: int, used_at: float) -> None:
        """Record when a token was last used."""

    async def revoke_token(self, token_id: int) -> bool:
        """Revoke a live token; ``False`` when there is none (or it was revoked)."""

    async def set_user_admin(self, user_id: int, is_admin: bool) -> bool: ...

    async def record_audit(self, entry: AuditEntry) -> int:
        """Append one audit row (``entry.id`` is ignored); its id."""

    async def list_audit(self, *, before_id: int | None, limit: int, target: str | None = None) -> list[AuditEntry]:
        """Audit rows newest first, older than ``before_id``, about ``target`` when given."""

    async def credit(self, user_id: int, amount_micros: int, *, kind: str, note: str | None, idempotency_key: str | None) -> Credit:
        """A top-up or a signed adjustment and its ledger row, in one transaction.
        With an idempotency key, the same key again returns the first credit
        (``replayed``) and moves nothing; with another request it is a ``Conflict``."""

    async def find_request(self, request_id: str) -> dict[str, Any] | None:
        """The usage row of the request with this id, as ``get_usage`` reads it."""
