"""A reservation written beside the upstream call instead of before it.

The quota policy reserves a request's maximum cost in one store write. Usually
the request waits for that write before anything else happens. When the policy
knows the user's balance covers the reservation with a wide margin (see
:class:`BalanceMargins`), it only starts the write (:func:`start`) and lets the
request go on: the router, the upstream call. The write is still the same
conditional statement, so it can still refuse; what changes is when the request
learns the answer:

- :func:`confirm`, which the relay calls before the first byte of an answer
  reaches the client, waits for the write and raises its refusal (the client
  then gets the 429 it would have got before the upstream call, and nothing is
  charged);
- the settlement waits for the write before it settles (:func:`wait`), so it
  always releases the reservation the write made, even when the request ended
  (failed, was refused by a later policy, lost its client) before confirming.

Money stays exact: no answer is delivered without a committed reservation, and
no settlement runs before its reservation's write finished.

Only a process that is its store's sole writer overlaps (:func:`sole_writer`):
the embedded store served by one process. With several workers on one SQLite
file, or replicas on PostgreSQL, the others' reservations are invisible here, so
a margin seen here proves nothing, and a refusal found after the upstream call
would leave the operator paying the provider for an answer nobody is charged
for: those always reserve before the call.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from .context import RequestContext
from ..sql import SQLITE

WORKERS_ENV = "RELAYGATE_WORKERS"  # set by `serve` for its worker processes (server.py)
MARGIN = 8  # the last-seen available balance must cover this many times the reservation
FRESH_SECONDS = 5.0  # how long a last-seen available balance is trusted
MAX_USERS = 10_000  # users remembered per process (forgotten all at once beyond)


def sole_writer(dialect: str) -> bool:
    """Whether this process alone reserves from its store's wallets: a SQLite store
    served by one worker (PostgreSQL is there for replicas)."""
    return dialect == SQLITE and os.environ.get(WORKERS_ENV, "1") == "1"


class BalanceMargins:
    """Per app: each user's available balance as this process's last reservation
    for them left it, and what its reservations still being written take.

    Writes of one batch report in any order, so a figure is trusted only while
    every debit it may predate is still counted in flight. After a refusal or a
    failure (:meth:`forget`) the user's writes already under way report nothing:
    such a figure may predate debits whose writes reported since (and are no
    longer in flight). Each write carries the epoch it started in, and the epoch
    moves on at every forgetting."""

    __slots__ = ("_seen", "_in_flight", "_epoch", "_forgotten", "_floor")

    def __init__(self) -> None:
        self._seen: dict[int, tuple[int, float]] = {}  # user id -> (available micro-USD, monotonic time)
        self._in_flight: dict[int, int] = {}  # user id -> micro-USD of writes not finished
        self._epoch = 0  # moves on at every forgetting
        self._forgotten: dict[int, int] = {}  # user id -> the epoch their last forgetting began
        self._floor = 0  # writes started before it report nothing (set when _forgotten is cleared)

    def covers(self, user_id: int, needed: int) -> bool:
        """Whether the user's balance covers ``needed`` with a wide margin, on what
        this process last saw, less what its writes in flight reserve."""
        seen = self._seen.get(user_id)
        if seen is None or time.monotonic() - seen[1] > FRESH_SECONDS:
            return False
        return seen[0] - self._in_flight.get(user_id, 0) >= needed * MARGIN

    def saw(self, user_id: int, available: int) -> None:
        """A reservation for the user left ``available`` micro-USD available."""
        if type(available) is not int:  # a store that does not say: never overlap
            return
        if len(self._seen) >= MAX_USERS and user_id not in self._seen:
            self._seen.clear()
        seen = self._seen.get(user_id)
        if seen is not None and available > seen[0] and time.monotonic() - seen[1] <= FRESH_SECONDS:
            # writes of one batch may report in any order: a higher figure can predate a
            # debit already seen, so it waits until the lower one is stale (a top-up too)
            return
        self._seen[user_id] = (available, time.monotonic())

    def forget(self, user_id: int) -> None:
        self._seen.pop(user_id, None)
        self._epoch += 1
        if len(self._forgotten) >= MAX_USERS and user_id not in self._forgotten:
            self._forgotten.clear()
            self._floor = self._epoch  # every write under way is now from before it
        self._forgotten[user_id] = self._epoch

    def reserving(self, user_id: int, needed: int) -> int:
        """A reservation of ``needed`` for the user is being written (awaited or not):
        until it is done, what it takes is not in the last-seen balance. Returns the
        epoch it started in, for :meth:`reserved`."""
        self._in_flight[user_id] = self._in_flight.get(user_id, 0) + needed
        return self._epoch

    def reserved(self, user_id: int, needed: int, available: int | None, started: int) -> None:
        """That write is done: it left ``available`` (``None``: it failed or was refused)."""
        left = self._in_flight.get(user_id, 0) - needed
        if left > 0:
            self._in_flight[user_id] = left
        else:
            self._in_flight.pop(user_id, None)
        if available is None:
            self.forget(user_id)
        elif started >= max(self._floor, self._forgotten.get(user_id, 0)):
            self.saw(user_id, available)
        else:  # begun before the user's last forgetting: its figure may be stale, and so may the one seen since
            self._seen.pop(user_id, None)

    def start(self, ctx: RequestContext, user_id: int, needed: int, write: Coroutine[Any, Any, int]) -> None:
        """Start the reservation ``write`` (it returns the available balance after
        it) as the request's pending one (``ctx.pending_hold``)."""
        started = self.reserving(user_id, needed)
        ctx.pending_hold = PendingHold(self, user_id, needed, started, asyncio.ensure_future(write))


class PendingHold:
    """A request's reservation whose write is in flight (``ctx.pending_hold``).

    This module owns it: :func:`confirm` (the relay and the session relay, before
    the first byte), :func:`pending` and :func:`wait` (the settlement) are the only
    readers, and :func:`wait` the only one that clears it."""

    __slots__ = ("_margins", "_user_id", "_needed", "_started", "task")

    def __init__(self, margins: BalanceMargins, user_id: int, needed: int, started: int, task: asyncio.Future[int]) -> None:
        self._margins, self._user_id, self._needed, self._started, self.task = margins, user_id, needed, started, task
        task.add_done_callback(self._written)

    def _written(self, task: asyncio.Future[int]) -> None:
        ok = not task.cancelled() and task.exception() is None
        self._margins.reserved(self._user_id, self._needed, task.result() if ok else None, self._started)


async def confirm(ctx: RequestContext, cleanup: Callable[[], Awaitable[None]] | None = None) -> None:
    """Before the first byte of an answer: wait for the request's reservation if
    it is still being written, and raise its refusal (or its failure) if it
    failed, after ``cleanup`` (closing the upstream's answer); the charge is then
    dropped. Nothing to do when none is pending."""
    hold = ctx.pending_hold
    if hold is None:
        return
    task = hold.task
    try:
        if not task.done():
            await asyncio.shield(task)  # cancelled here: the write goes on, the settlement waits for it
        error = task.exception()
        if error is not None:
            ctx.charge = None
            ctx.refused_by = ctx.refused_by or "quota"
            raise error
    except BaseException:
        if cleanup is not None:
            await cleanup()
        raise


async def wait(ctx: RequestContext) -> None:
    """For the settlement: let the request's reservation write finish, whatever
    its result (a failed one leaves no charge to settle)."""
    hold = ctx.pending_hold
    if hold is None:
        return
    ctx.pending_hold = None
    try:
        await hold.task
    except Exception:
        ctx.charge = None


def pending(ctx: RequestContext) -> bool:
    """Whether the request's reservation is still being written."""
    hold = ctx.pending_hold
    return hold is not None and not hold.task.done()
