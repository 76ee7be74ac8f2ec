"""The admin layer's port to the store: what operators' and users' operations
need of the database, as typed coroutines.

The SQLite store implements it in :mod:`gateway_core.store.sqlite_admin`; a
PostgreSQL store is one more implementation. Methods do what they say and no
more: the rules (who may, what is valid, which caches to tell) live in the
operations of :mod:`gateway_core.admin`. They raise
:class:`~gateway_core.admin.errors.Conflict` for a taken name,
:class:`~gateway_core.admin.errors.Invalid` for a value the store refuses and
:class:`~gateway_core.admin.errors.StoreFailure` when the database fails; a
missing row is ``None`` or ``False``. Money is integer micro-USD.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..records import (
    AuditReport,
    ChannelRecord,
    ChannelTraffic,
    Cursor,
    DailySpending,
    DisabledKey,
    GroupRecord,
    HoldRecord,
    InitResult,
    KeyRecord,
    LedgerEntry,
    PriceRecord,
    UsageFilter,
    UsageTotal,
    UserOverview,
    UserRecord,
)
from ..billing.budgets import BudgetUse
from ..billing.codes import Redeemed, RedemptionCode
from ..store.request_store import BreakerReport, ModelFallback
from ..base.retention import Prunable, RollupStep
from .port_access import AccessStore
from .port_teams import SignupStore, TeamStore

LimitChanges = Mapping[str, int | None]  # rpm / tpm / concurrency -> value (None: not set)
ChannelFields = Mapping[str, Any]  # the fields of ChannelRecord to store (all when adding)
UsageRowDict = dict[str, Any]  # a usage-log row by column (attempts decoded)


@runtime_checkable
class AdminStore(AccessStore, TeamStore, SignupStore, Protocol):
    # --- users ---------------------------------------------------------------

    async def create_user(self, name: str, *, is_admin: bool, password_hash: str | None, groups: Sequence[str]) -> UserRecord:
        """Create a user opened to ``groups`` (missing groups are created, ratio 1)."""

    async def find_user(self, name: str) -> UserRecord | None: ...

    async def get_user(self, user_id: int) -> UserRecord | None: ...

    async def list_users(self) -> list[UserOverview]:
        """Every user, by id, with its number of live keys."""

    async def set_user_enabled(self, user_id: int, enabled: bool) -> bool:
        """Enable or disable a user that is not deleted; ``False`` when there is none."""

    async def delete_user(self, user_id: int) -> bool:
        """Delete a user in one transaction: disabled, signed out, no password, every
        key deleted and token revoked; its row, ledger and usage rows stay.
        ``False`` when there is no such user, or it was deleted before."""

    async def set_password_hash(self, user_id: int, password_hash: str | None) -> bool: ...

    async def change_user_groups(self, user_id: int, *, opened: Sequence[str], closed: Sequence[str]) -> bool:
        """Open groups (creating missing ones) and close others, in one transaction."""

    async def get_user_limits(self, user_id: int) -> dict[str, int | None] | None:
        """A user's stored limits and budgets; ``None``: no such user."""

    async def set_user_limits(self, user_id: int, changes: LimitChanges) -> dict[str, int | None] | None:
        """Change a user's rate-limit overrides; the stored limits after, ``None``: no such user."""

    # --- API keys ------------------------------------------------------------

    async def create_key(
        self,
        user_id: int,
        *,
        name: str,
        group: str,
        quota_micros: int | None,
        expires_at: float | None,
        models: Sequence[str],
        allow_ips: Sequence[str],
        limits: LimitChanges,
    ) -> tuple[KeyRecord, str]:
        """Create a key; the key and its secret (stored only hashed: shown once)."""

    async def get_key(self, key_id: int) -> KeyRecord | None: ...

    async def list_keys(self, user_id: int, *, include_deleted: bool = False) -> list[KeyRecord]: ...

    async def set_key_enabled(self, key_id: int, enabled: bool) -> bool: ...

    async def delete_key(self, key_id: int) -> bool:
        """Soft-delete a key (its usage rows keep it)."""

    async def update_key(
        self,
        key_id: int,
        *,
        name: str,
        quota_micros: int | None,
        expires_at: float | None,
        models: Sequence[str],
        allow_ips: Sequence[str],
        group: str | None = None,
    ) -> bool:
        """Change a live key (its group too, when given); ``False`` when there is none."""

    async def set_key_limits(self, key_id: int, changes: LimitChanges) -> dict[str, int | None] | None:
        """Change a key's own rate limits; the stored limits after, ``None``: no such key."""

    async def get_key_locks(self, key_id: int) -> dict[str, Any]:
        """The limits of a key its operator set (``api_keys.locks``; empty: none, or no such key)."""

    async def set_key_locks(self, key_id: int, locks: Mapping[str, Any]) -> None:
        """Replace the key's operator-set limits."""

    async def budget_spending(self, uses: Sequence[BudgetUse]) -> list[tuple[int, int | None]]:
        """What each budget's current window counts (its captured cost and the open
        reservations), and its oldest hour with captured cost (``None``: none)."""

    async def set_key_cost_header(self, key_id: int, on: bool) -> bool:
        """Whether the key's answers carry ``x-relaygate-cost-usd``; ``False``: no such key."""

    # --- redemption codes ------------------------------------------------------

    async def create_codes(
        self, batch: str, hashes: Sequence[tuple[str, str]], *, value_micros: int, group: str | None,
        expires_at: float | None, note: str | None, now: float,
    ) -> list[int]:  # fmt: skip
        """Store a batch of codes, each as ``(hash, prefix)``; their ids in order."""

    async def list_codes(self, batch: str | None, limit: int) -> list[RedemptionCode]:
        """Codes newest first (of one batch, or all)."""

    async def disable_code(self, code_id: int) -> bool:
        """Disable a code; ``False``: no such code."""

    async def redeem_code(self, user_id: int, code_hash: str, now: float) -> Redeemed | str:
        """Credit a code to a user, all or nothing; else why not (``wrong``, ``used``, ``expired``, ``disabled``)."""

    # --- channels ------------------------------------------------------------

    async def add_channel(self, fields: ChannelFields) -> ChannelRecord:
        """Store a channel, creating its missing groups in the same transaction."""

    async def find_channel(self, name: str) -> ChannelRecord | None: ...

    async def get_channel(self, channel_id: int) -> ChannelRecord | None: ...

    async def list_channels(self) -> list[ChannelRecord]: ...

    async def unsealed_channels(self) -> int:
        """How many channels hold an upstream key stored in the clear (not sealed)."""

    async def update_channel(self, channel_id: int, changes: ChannelFields) -> ChannelRecord | None:
        """Change some fields, creating missing groups; new ``api_keys`` keep the
        disabled marks of the keys they keep. The channel after, ``None``: no such channel."""

    async def enable_channel(self, channel_id: int) -> list[DisabledKey] | None:
        """Route to the channel again and use its disabled upstream keys again
        (their breaker states forgotten), in one transaction; the marks removed."""

    async def disable_channel(self, channel_id: int) -> bool: ...

    async def delete_channel(self, channel_id: int) -> bool:
        """Remove the channel and its breaker states (usage rows keep its id and name)."""

    async def list_breakers(self) -> list[BreakerReport]:
        """The breaker states the workers last reported."""

    async def channel_traffic(self, since: float) -> list[ChannelTraffic]: ...

    # --- groups and prices -----------------------------------------------------

    async def set_group(self, name: str, *, ratio_ppm: int | None, limits: LimitChanges) -> GroupRecord:
        """Create the group if missing, then change its ratio (when given) and default limits."""

    async def list_groups(self) -> list[GroupRecord]: ...

    async def set_fallback(self, scope: str, owner: str, model: str, fallback: str) -> ModelFallback:
        """Create or replace a model fallback (``scope`` ``group`` or ``key``); it as stored."""

    async def delete_fallback(self, scope: str, owner: str, model: str) -> bool:
        """Remove one; ``False`` when there was none."""

    async def list_fallbacks(self) -> list[ModelFallback]: ...

    async def set_price(self, price: PriceRecord) -> PriceRecord:
        """Create or replace a model's price; it as stored."""

    async def list_prices(self) -> list[PriceRecord]: ...

    async def delete_price(self, model: str) -> bool: ...

    # --- wallet ----------------------------------------------------------------

    async def topup(self, user_id: int, amount_micros: int, note: str | None) -> int:
        """Credit a user (a ``topup`` ledger row); the new balance."""

    async def adjust(self, user_id: int, amount_micros: int, note: str | None) -> int:
        """Change a balance by a signed amount (an ``adjustment`` ledger row); the new balance."""

    async def list_ledger(self, user_id: int, *, before_id: int | None, limit: int) -> list[LedgerEntry]:
        """A user's ledger, newest first, ``before_id`` paging backwards."""

    async def ledger_of_request(self, request_id: str) -> list[LedgerEntry]:
        """The ledger rows of one request (by the gateway's request id), oldest first."""

    async def list_holds(self, user_id: int | None = None) -> list[HoldRecord]: ...

    async def check_ledger(self) -> AuditReport:
        """Check the money invariants in one snapshot."""

    # --- usage -----------------------------------------------------------------

    async def page_usage(
        self, filters: UsageFilter, before: Cursor | None, limit: int, *, after: Cursor | None = None
    ) -> list[UsageRowDict]:
        """A page of usage rows, newest first: older than ``before`` or newer than
        ``after`` (keyset cursors); one bounded index range scan per page."""

    async def get_usage(self, log_id: int) -> UsageRowDict | None: ...

    async def usage_filter_totals(self, filters: UsageFilter) -> UsageTotal:
        """Requests, tokens, cost and errors of every usage row ``filters`` match."""

    async def daily_spending(self, since: float, user_id: int | None = None) -> list[DailySpending]: ...

    async def usage_totals(
        self, by: str, since: float, limit: int = 50, *, until: float | None = None, user_id: int | None = None,
        bucket: float | None = None,
    ) -> list[UsageTotal]:
        """Totals from ``since`` to ``until`` (everyone's, or one user's) by ``"model"``,
        ``"user"``, ``"channel"`` or ``"key"``, costliest first; or by ``"time"`` in
        buckets of ``bucket`` seconds (:func:`gateway_core.store.usage.totals_query`)."""

    # --- retention (gateway_core.base.retention) -------------------------------------

    async def roll_up_usage(self, batch: int, now: float | None = None, margin: float | None = None) -> RollupStep:
        """One transaction of the rollup: fold at most ``batch`` ids of the usage log
        past the mark into the hourly totals and move the mark; ids are folded once
        ``margin`` seconds (``None``: the store's own) passed since they were seen,
        by the clock ``now`` (``None``: the database's, which every replica shares)."""

    async def prune_usage(self, before: float, batch: int) -> int | None:
        """One transaction: delete at most ``batch`` of the oldest rolled-up usage rows
        created before ``before``; how many (``None``: another process is pruning)."""

    async def prunable_usage(self, before: float) -> Prunable:
        """The usage rows created before ``before``: rolled up (prunable) and not yet."""

    # --- set-up ------------------------------------------------------------------

    async def initialize(self, *, admin_password_hash: str, first_channel: ChannelFields | None) -> InitResult:
        """What ``relaygate init`` creates, all or nothing (see :func:`gateway_core.admin.setup.initialize`)."""
