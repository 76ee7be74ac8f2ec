"""The usage log's retention (settings: :mod:`gateway_core.base.retention`): the rollup
into hourly totals and the pruning of old rows, for ``relaygate logs prune`` and
the job ``serve`` runs (:mod:`gateway_core.runtime.retention_job`).

Both go in small steps, each its own short transaction through the store's
admin port, with a pause between two: on SQLite each step waits its turn in the
writer's queue behind the settlements and holds the writer for one batch only;
on PostgreSQL a prune step holds the rows' locks of one batch. Only
``usage_logs`` rows are deleted, and only those already counted in
``usage_hourly``: the ledger, budgets' buckets, the audit log and reservations
are never touched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from ..base.retention import PruneReport, Retention
from .context import Admin

MAX_STEPS = 10_000  # rollup or prune transactions in one run at most (the next run goes on)
Sleep = Callable[[float], Awaitable[None]]


async def roll_up(
    admin: Admin, settings: Retention, *, now: float | None = None, margin: float | None = None, sleep: Sleep = asyncio.sleep
) -> int:
    """Fold the usage rows not counted yet into the hourly totals, ``settings.batch_rows``
    ids a transaction; the mark after (every row of an id up to it is counted).
    ``margin``: seconds an id must have been seen before it is folded (``None``: the store's own),
    by the clock ``now`` (``None``: the database's)."""
    idle = 0
    for _ in range(MAX_STEPS):
        step = await admin.store.roll_up_usage(settings.batch_rows, now, margin)
        idle = 0 if step.folded else idle + 1
        if step.seen_id <= step.end or idle >= 2:  # caught up with every id seen, or waiting for the margin
            return step.end
        if step.folded:
            await sleep(settings.batch_pause_seconds)
    return step.end


async def prune(
    admin: Admin, settings: Retention, *, now: float | None = None, dry_run: bool = False, margin: float | None = None,
    sleep: Sleep = asyncio.sleep,
) -> PruneReport:
    """Roll the log up, then (with ``usage_days`` set) delete its rolled-up rows
    older than the retention, ``settings.batch_rows`` a transaction. A
    ``dry_run`` writes nothing: it reports what a prune would delete now."""
    cutoff = settings.cutoff(time.time() if now is None else now) if settings.prunes else None
    if dry_run:
        found = await admin.store.prunable_usage(cutoff if cutoff is not None else 0.0)
        return PruneReport(found.rolled_id, cutoff, found)
    rolled = await roll_up(admin, settings, now=now, margin=margin, sleep=sleep)
    if cutoff is None:
        return PruneReport(rolled)
    pruned = 0
    for _ in range(MAX_STEPS):
        deleted = await admin.store.prune_usage(cutoff, settings.batch_rows)
        if deleted is None:
            return PruneReport(rolled, cutoff, pruned=pruned, busy=True)
        pruned += deleted
        if deleted < settings.batch_rows:
            break
        await sleep(settings.batch_pause_seconds)
    return PruneReport(rolled, cutoff, pruned=pruned)
