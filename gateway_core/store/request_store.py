"""The request path's port to the store: what serving a request needs of the database.

The request path (key cache, router, price book, quota, recorder, hold sweeper,
health board) asks a :class:`RequestStore` and nothing else, so another store
(PostgreSQL) is one more implementation of this Protocol, passed to
``create_app(store=...)``. The embedded SQLite store implements it in
:mod:`gateway_core.store.sqlite_store`.

Every method is a coroutine that never blocks the event loop; a write has
happened durably when its coroutine returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ..billing.cost import UNIT_RATIO_PPM
from ..errors import GatewayError
from ..records import ChannelRecord, KeyRecord, PriceRecord, UsageRow

CHANNEL_SLOT = ""  # the key_slot of a channel's own breaker; a key's is its fingerprint


@attrs.frozen
class ModelFallback:
    """``model`` → ``fallback`` for the keys of a group (``scope`` ``"group"``,
    ``owner`` its name) or for one key (``"key"``, ``owner`` its id): the model
    that serves a request when every channel of ``model`` failed before its
    first byte."""

    scope: str
    owner: str
    model: str
    fallback: str
    created_at: float = 0.0


class HoldRefused(Exception):
    """A reservation the key's quota or the user's balance cannot cover.

    ``what`` is ``"key_quota"``, ``"balance"`` or ``"budget"``. For the key:
    ``used``, ``held`` (reserved by requests in flight) and ``limit`` (the
    quota); for the balance: ``limit`` is the balance and ``used``/``held`` are
    0; for a budget: ``budget`` names it, ``limit`` is its cap, ``used`` what
    its window counts (reservations included), ``resets_at`` when it resets.
    """

    def __init__(
        self, what: str, *, needed: int, limit: int, used: int = 0, held: int = 0, budget: Any = None, resets_at: float | None = None
    ) -> None:
        super().__init__(f"{what}: needs {needed} micro-USD, limit {limit}, used {used}, held {held}")
        self.what = what
        self.needed = needed
        self.limit = limit
        self.used = used
        self.held = held
        self.budget = budget  # what = "budget": the BudgetUse (gateway_core.billing.budgets) refused
        self.resets_at = resets_at


class StoreUnavailable(GatewayError):
    """The database could not be reached, or did not answer within the store's
    timeout. A request that needs it gets a 503 in its protocol's shape; the
    message names the store (never its password)."""

    status = 503
    kind = "unavailable"

    def __init__(self, message: str, *, retry_after: float | None = 1.0) -> None:
        super().__init__(message, code="store_unavailable", retry_after=retry_after)


class StoreLocked(StoreUnavailable):
    """Another process held the database's write lock past the busy timeout
    (SQLite): nothing was written, so the write may be sent again as it is."""


@attrs.frozen
class PriceSnapshot:
    """Every model's price and every group's ratio, read together."""

    prices: dict[str, PriceRecord]
    ratios: dict[str, int]  # group name -> ratio in parts per million

    def ratio(self, group: str) -> int:
        return self.ratios.get(group, UNIT_RATIO_PPM)


@attrs.frozen
class BreakerReport:
    """A circuit breaker's state as one worker last saw it change."""

    channel_id: int
    key_slot: str
    key_index: int | None
    state: str  # closed, open
    failures: int
    opened_at: float | None
    until: float | None  # Unix time the cool-down ends (open)
    last_error: str | None
    worker: str
    updated_at: float


@attrs.frozen
class HoldOwner:
    """A gateway process that makes reservations: its id (unique per start), its
    replica (host) and pid, and the Unix time its lease on its holds runs out."""

    id: str
    replica: str
    pid: int
    started_at: float
    lease_until: float


@runtime_checkable
class RequestStore(Protocol):
    """What the request path needs of the database (one object per worker)."""

    @property
    def running(self) -> bool:
        """Started and not closed: writes are accepted."""

    async def start(self) -> None:
        """Apply nothing; open connections and writers. Called once per worker."""

    async def close(self) -> None:
        """Flush every pending write, then release connections. Safe to call twice."""

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        """The API key with this hash (with its user's state and limits), or ``None``."""

    async def list_channels(self) -> Sequence[ChannelRecord]:
        """Every channel, enabled or not, with its upstream keys."""

    async def price_snapshot(self) -> PriceSnapshot:
        """Every model price and group ratio."""

    async def hold(self, user_id: int, amount_micros: int, request_id: str, key_id: int | None) -> int:
        """Reserve ``amount_micros`` of the user's balance (and the key's quota) for
        ``request_id`` in one conditional write; the new balance, or :class:`HoldRefused`."""

    async def hold_within_budgets(
        self, user_id: int, amount_micros: int, request_id: str, key_id: int | None, budgets: Sequence[Any]
    ) -> int:
        """:meth:`hold` once each budget (:class:`~gateway_core.billing.budgets.BudgetUse`)
        has room for ``amount_micros``, checked in the same transaction and serialized
        per user: the balance, or :class:`HoldRefused` (``budget``). A budget counts
        its window's captured cost and the open reservations, so a settlement or a
        released reservation needs no further write."""

    async def record(self, row: UsageRow, user_id: int | None) -> None:
        """Settle the request's charge against ``user_id`` (``None``: nothing is
        billed) and insert its usage row, in one commit. A request id recorded
        twice fails whole: a request is never charged twice."""

    async def release_stale_holds(self, older_than: float) -> int:
        """Release reservations made before the Unix time ``older_than``, and those
        of a process whose lease has run out; how many."""

    def own_holds(self, owner: str) -> None:
        """Mark the reservations this store makes from now on as ``owner``'s."""

    async def renew_hold_owner(self, owner: HoldOwner, gone: Sequence[str] = ()) -> list[HoldOwner]:
        """Save ``owner`` and its lease, end the leases of the owners in ``gone``
        (their holds are then released by the next sweep), and return the other
        owners whose lease still runs."""

    def report_breaker(self, report: BreakerReport) -> None:
        """Save a breaker's new state without waiting (errors are logged)."""

    def disable_channel_key(self, channel_id: int, fingerprint: str, index: int, reason: str) -> None:
        """Mark an upstream key disabled for good, without waiting (errors are logged)."""
