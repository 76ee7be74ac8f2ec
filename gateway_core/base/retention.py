"""How long the usage log keeps its rows: the ``[retention]`` settings and what
the rollup and the pruning report (the operations: :mod:`gateway_core.admin.retention`;
the job ``serve`` runs: :mod:`gateway_core.runtime.retention_job`).

``plugins.toml``::

    [retention]
    usage_days = 0              # usage rows older than this many days are deleted (0: kept for ever)
    batch_rows = 500            # rows one transaction rolls up or deletes
    batch_pause_seconds = 0.05  # the pause between two such transactions
    interval_seconds = 60       # how often serve rolls the log up into hourly totals and prunes it

The ledger, budgets' buckets, the audit log and reservations are never pruned:
only ``usage_logs`` rows, once they are counted in the hourly totals
(:mod:`gateway_core.store.usage_hourly`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

DAY = 86_400
HOUR = 3600


@attrs.frozen
class Retention:
    """The ``[retention]`` settings (module docstring)."""

    usage_days: int = 0
    batch_rows: int = 500
    batch_pause_seconds: float = 0.05
    interval_seconds: float = 60.0

    @classmethod
    def from_table(cls, table: object) -> Retention:
        """The settings of a ``[retention]`` table; ``ValueError`` says what is wrong."""
        if not isinstance(table, Mapping):
            raise ValueError("[retention] must be a table")
        unknown = set(table) - {field.name for field in attrs.fields(cls)}
        if unknown:
            raise ValueError(f"unknown [retention] setting(s): {', '.join(sorted(unknown))}")
        defaults = cls()
        return cls(
            usage_days=_whole(table, "usage_days", defaults.usage_days, least=0),
            batch_rows=_whole(table, "batch_rows", defaults.batch_rows, least=1),
            batch_pause_seconds=_seconds(table, "batch_pause_seconds", defaults.batch_pause_seconds, zero=True),
            interval_seconds=_seconds(table, "interval_seconds", defaults.interval_seconds, zero=False),
        )

    @property
    def prunes(self) -> bool:
        return self.usage_days > 0

    def cutoff(self, now: float) -> float:
        """Rows created before this time are pruned: ``usage_days`` before ``now``,
        down to the hour (whole hours go, so every hour left is whole in the log)."""
        return float((int(now - self.usage_days * DAY) // HOUR) * HOUR)


@attrs.frozen
class RollupStep:
    """One rollup transaction: it folded ids ``(rolled_id, end]`` into the hourly
    totals and then remembered ``seen_id`` (the largest id, seen at ``seen_at``)."""

    rolled_id: int
    end: int
    seen_id: int
    seen_at: float

    @property
    def folded(self) -> bool:
        return self.end > self.rolled_id


@attrs.frozen
class Prunable:
    """The usage rows created before a cutoff: ``rows`` rolled up (what a prune
    deletes; created from ``oldest`` to ``newest``) and ``waiting`` not rolled
    up yet (left for a later prune); ``rolled_id``: the rollup's mark."""

    rows: int
    waiting: int
    oldest: float | None
    newest: float | None
    rolled_id: int


@attrs.frozen
class PruneReport:
    """What one run did: the rollup's mark after it (``rolled_id``: every usage row
    of an id up to it is counted in the hourly totals), and with pruning on, the
    ``cutoff``, what was ``found`` before it (a dry run: only that) and the rows
    ``pruned``; ``busy``: another process was pruning (PostgreSQL), this one left it."""

    rolled_id: int
    cutoff: float | None = None
    found: Prunable | None = None
    pruned: int = 0
    busy: bool = False


def _whole(table: Mapping[str, Any], name: str, default: int, *, least: int) -> int:
    value = table.get(name, default)
    if type(value) is not int or value < least:
        raise ValueError(f"[retention] {name} must be a whole number, {least} or more, got {value!r}")
    return value


def _seconds(table: Mapping[str, Any], name: str, default: float, *, zero: bool) -> float:
    value = table.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not zero):
        bound = "0 or more" if zero else "more than 0"
        raise ValueError(f"[retention] {name} must be a number of seconds, {bound}, got {value!r}")
    return float(value)
