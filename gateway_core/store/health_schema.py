"""Migration ``0004_channel_health``: per-channel timeouts and concurrency cap,
upstream keys disabled after the upstream refused them, and the circuit
breakers' last reported state."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


def migrate_0004_channel_health(db: sqlite_utils.Database) -> None:
    # NULL timeouts: the gateway's [gateway.timeouts]; concurrency 0: no cap
    db.execute("ALTER TABLE channels ADD COLUMN concurrency INTEGER NOT NULL DEFAULT 0")
    for column in ("timeout_connect", "timeout_first_byte", "timeout_idle"):
        db.table("channels").add_column(column, float)
    # a JSON list of {"index", "fingerprint", "reason", "at"}: keys never used again
    # until an operator re-enables them (relaygate channel enable)
    db.execute("ALTER TABLE channels ADD COLUMN disabled_keys TEXT NOT NULL DEFAULT '[]'")

    # One row per breaker (a channel's: key_slot '', an upstream key's: its
    # fingerprint), written by the worker whose breaker changed state. Breakers
    # live in each worker's memory; this is what the CLI and the console show.
    db.table("channel_health").create(
        {
            "channel_id": int,
            "key_slot": str,
            "key_index": int,
            "state": str,
            "failures": int,
            "opened_at": float,
            "until": float,
            "last_error": str,
            "worker": str,
            "updated_at": float,
        },
        pk=("channel_id", "key_slot"),
        not_null={"channel_id", "key_slot", "state", "updated_at"},
    )
