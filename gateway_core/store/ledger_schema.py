"""Migration ``0006_ledger_money_only``: the ledger keeps money that moved only.

Before it, a request wrote three ledger rows — ``hold`` (the reservation taken
from the balance), ``release`` (given back) and ``capture`` (the cost) — and
the sweeper a ``release`` for each stale reservation. From it on, a
reservation lives in ``holds`` and in the user's new ``held_micros`` (as it
already did in the key's), the balance counts money only, and what a user may
spend is ``balance_micros - held_micros``.

The migration, in one transaction (the SQLite and PostgreSQL versions do the
same steps):

1. ``users.held_micros`` = the sum of the user's open reservations, and the
   same amount added back to ``balance_micros`` (where the old ``hold`` row had
   taken it): what the user may spend is unchanged to the micro-USD;
2. the ``hold`` and ``release`` rows are deleted (the append-only triggers are
   lifted for this transaction only), the other rows keep their ids;
3. each remaining row's ``balance_after_micros`` is recomputed as the running
   sum of the user's rows, so the chain has no gaps.

The sum of the ledger rows of a consistent database was the old balance plus
the open reservations, which is the new balance: every balance still equals
the sum of its ledger rows, and nothing is computed from the ledger, so a book
that did not balance before still shows it to ``relaygate check``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


RESERVATION_KINDS = ("hold", "release")  # the ledger kinds this migration removes

_RESERVATIONS = ", ".join(f"'{kind}'" for kind in RESERVATION_KINDS)
_APPEND_ONLY = {
    "ledger_append_only_update": "BEFORE UPDATE ON ledger BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END",
    "ledger_append_only_delete": "BEFORE DELETE ON ledger BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END",
}


def migrate_0006_ledger_money_only(db: sqlite_utils.Database) -> None:
    db.execute("ALTER TABLE users ADD COLUMN held_micros INTEGER NOT NULL DEFAULT 0")
    db.execute(
        "UPDATE users SET held_micros = h.total, balance_micros = balance_micros + h.total "
        "FROM (SELECT user_id, sum(amount_micros) AS total FROM holds GROUP BY user_id) AS h "
        "WHERE users.id = h.user_id"
    )
    for name in _APPEND_ONLY:
        db.execute(f"DROP TRIGGER IF EXISTS {name}")
    db.execute(f"DELETE FROM ledger WHERE kind IN ({_RESERVATIONS})")
    db.execute(
        "UPDATE ledger SET balance_after_micros = chained.running FROM ("
        " SELECT id, sum(amount_micros) OVER (PARTITION BY user_id ORDER BY id) AS running FROM ledger"
        ") AS chained WHERE ledger.id = chained.id AND ledger.balance_after_micros != chained.running"
    )
    for name, body in _APPEND_ONLY.items():
        db.execute(f"CREATE TRIGGER {name} {body}")
