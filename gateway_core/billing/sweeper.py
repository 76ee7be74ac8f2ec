"""Releases reservations their request never settled (its process was killed).

Every worker is a **hold owner**: its reservations carry its id, and it holds a
lease on them (``[gateway] hold_lease_seconds``) that it renews every third of the
lease. Each sweep (at start, before the gateway serves, then every interval):

1. renews this worker's lease (a clean stop ends it);
2. ends the lease of owners on the same replica whose process is gone (its pid
   no longer runs, or a new process of this replica has its pid), so a gateway
   restarted after a crash frees what the killed one held at once;
3. releases the holds whose owner's lease has run out (a dead replica's, within
   one lease), and any hold older than ``[gateway] stale_hold_seconds``.

Releasing deletes the hold first, so two workers never release one twice, and a
request that settles after all still captures its cost.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time

import attrs
import structlog

from ..store.request_store import HoldOwner, RequestStore

log = structlog.get_logger("relaygate.billing")
PROCESS_TOKEN = secrets.token_hex(4)  # tells this process from an earlier one that had its pid


def new_owner(replica: str | None = None) -> HoldOwner:
    """This process's identity as a hold owner (one per app: ``replica:pid:process:app``)."""
    replica = replica or socket.gethostname()
    return HoldOwner(f"{replica}:{os.getpid()}:{PROCESS_TOKEN}:{secrets.token_hex(4)}", replica, os.getpid(), time.time(), 0.0)


def process_gone(owner: HoldOwner) -> bool:
    """Whether ``owner`` (on this replica) belongs to a process that no longer runs."""
    if owner.pid == os.getpid():
        return owner.id.rsplit(":", 2)[-2] != PROCESS_TOKEN  # an earlier process with our pid
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _zombie(owner.pid)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited but is not reaped yet (Linux; elsewhere: no)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


class HoldSweeper:
    def __init__(
        self,
        store: RequestStore,
        stale_after: float,
        *,
        lease: float = 60.0,
        replica: str | None = None,
        interval: float | None = None,
    ) -> None:
        self._store = store
        self.stale_after = stale_after
        self.lease = lease
        self.owner = new_owner(replica)
        self.interval = interval if interval is not None else max(0.5, min(lease / 3, stale_after / 4))
        self._task: asyncio.Task | None = None

    async def begin(self) -> None:
        """Own this store's holds, sweep once (before the gateway serves), then keep sweeping."""
        self._store.own_holds(self.owner.id)
        try:
            await self.sweep()
        except Exception as exc:  # the loop tries again
            log.error("billing.sweep_failed", error=repr(exc))
        self.start()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        """Stop sweeping and end this owner's lease (a clean stop: its requests have
        settled), so the next start does not take this process for one that died."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            try:
                await self._store.renew_hold_owner(attrs.evolve(self.owner, lease_until=0.0))
            except Exception as exc:  # the store is failing: the lease runs out by itself
                log.error("billing.lease_not_ended", error=repr(exc))

    async def sweep(self) -> int:
        now = time.time()
        owner = attrs.evolve(self.owner, lease_until=now + self.lease)
        others = await self._store.renew_hold_owner(owner)
        gone = [other.id for other in others if other.replica == owner.replica and process_gone(other)]
        if gone:
            await self._store.renew_hold_owner(owner, gone)
            log.warning("billing.hold_owners_gone", owners=gone)
        released = await self._store.release_stale_holds(now - self.stale_after)
        if released:
            log.warning("billing.stale_holds_released", count=released, older_than_s=self.stale_after)
        return released

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is closing or failing: try again later
                log.error("billing.sweep_failed", error=repr(exc))
