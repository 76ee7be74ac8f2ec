"""The processes that own reservations, and their leases (``hold_owners``).

A process writes its row when it starts and renews its lease while it runs; a
hold whose owner's lease has run out is released by
:func:`gateway_core.store.wallet.release_stale_holds`. Rows of owners whose lease
ended a day ago and that hold nothing are forgotten.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from .request_store import HoldOwner
from .connection import atomic

FORGET_AFTER = 86400.0
_COLUMNS = "id, replica, pid, started_at, lease_until"


def renew_hold_owner(conn: sqlite3.Connection, owner: HoldOwner, gone: Sequence[str] = ()) -> list[HoldOwner]:
    now = time.time()
    with atomic(conn):
        conn.execute(
            f"INSERT INTO hold_owners ({_COLUMNS}) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until",
            (owner.id, owner.replica, owner.pid, owner.started_at, owner.lease_until),
        )
        for other in gone:
            if other != owner.id:
                conn.execute("UPDATE hold_owners SET lease_until = 0 WHERE id = ?", (other,))
        conn.execute(
            "DELETE FROM hold_owners WHERE lease_until < ? "
            "AND NOT EXISTS (SELECT 1 FROM holds WHERE holds.owner = hold_owners.id)",
            (now - FORGET_AFTER,),
        )
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM hold_owners WHERE id <> ? AND lease_until >= ? ORDER BY id", (owner.id, now)
        ).fetchall()
    return [HoldOwner(*row) for row in rows]
