"""The usage log's rollup and pruning on SQLite (the admin port's part of
:class:`~gateway_core.admin.port.AdminStore`, :mod:`.usage_hourly`): each call
is one short transaction through the group-commit writer, queued behind the
settlements like any write, so it never holds the writer for more than one batch."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..base.retention import Prunable, RollupStep
from . import usage_hourly

# ids are handed out in commit order (one writer at a time): every id seen is final
SQLITE_MARGIN = 0.0


class SqliteRetention:
    """Mixed into :class:`~.sqlite_admin.SqliteAdmin`, whose ``_read`` and ``_write`` it uses."""

    _read: Callable[..., Awaitable[Any]]
    _write: Callable[..., Awaitable[Any]]

    async def roll_up_usage(self, batch: int, now: float | None = None, margin: float | None = None) -> RollupStep:
        when = time.time() if now is None else now  # one machine: its clock is the database's
        step: RollupStep = await self._write(usage_hourly.roll_up, batch, SQLITE_MARGIN if margin is None else margin, when)
        return step

    async def prune_usage(self, before: float, batch: int) -> int | None:
        deleted: int = await self._write(usage_hourly.prune, before, batch)
        return deleted

    async def prunable_usage(self, before: float) -> Prunable:
        found: Prunable = await self._read(usage_hourly.prunable, before)
        return found
