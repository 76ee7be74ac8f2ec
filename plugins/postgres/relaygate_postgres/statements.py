"""The request path's SQL on PostgreSQL: each write is one statement.

Every statement that touches both an API key and its user locks the key's row
before the user's (the hold in its condition, the settlement and the sweeper
through a sub-select the user's update waits for), so two of them never wait on
each other in a cycle. Reads reuse the SQLite modules' column lists, so both
stores build their records from the same rows.
"""

from __future__ import annotations

import attrs

from gateway_core.store.request_store import BreakerReport
from gateway_core.store.channels import _SELECT as CHANNELS_SELECT
from gateway_core.store.keys import _SELECT as KEYS_SELECT
from gateway_core.store.prices import _SELECT as PRICES_SELECT
from gateway_core.store.usage import _COLUMNS as USAGE_COLUMNS
from gateway_core.store import budgets as _budgets

FIND_KEY = f"{KEYS_SELECT} WHERE k.key_hash = $1"
LIST_CHANNELS = f"{CHANNELS_SELECT} ORDER BY id"
LIST_PRICES = f"{PRICES_SELECT} ORDER BY model"
GROUP_RATIOS = 'SELECT name, ratio_ppm FROM "groups" ORDER BY name'

# $1 user, $2 amount, $3 request id, $4 key (or NULL), $5 now, $6 the owning process. The user's
# available balance (balance less held) and the key's quota are checked in the
# one statement that reserves the money: the key's row is locked (FOR UPDATE:
# its latest version is checked) before the user's held amount grows, and
# nothing is written when either refuses. No ledger row: no money moved.
HOLD = """
WITH debit AS (
    UPDATE users SET held_micros = held_micros + $2::bigint
    WHERE id = $1::bigint AND balance_micros - held_micros >= $2::bigint
      AND ($4::bigint IS NULL OR EXISTS (
          SELECT 1 FROM api_keys
          WHERE id = $4::bigint
            AND (quota_micros IS NULL OR used_micros + held_micros + $2::bigint <= quota_micros)
          FOR UPDATE))
    RETURNING balance_micros - held_micros AS available
), reserve AS (
    UPDATE api_keys SET held_micros = held_micros + $2::bigint FROM debit WHERE api_keys.id = $4::bigint
), hold AS (
    INSERT INTO holds (request_id, user_id, key_id, amount_micros, created_at, owner)
    SELECT $3::text, $1::bigint, $4::bigint, $2::bigint, $5::double precision, $6::text FROM debit
)
SELECT available FROM debit
"""

# why a hold was refused, read after the refusal: $1 user, $2 key (or NULL)
HOLD_REFUSAL = """
SELECT (SELECT balance_micros - held_micros FROM users WHERE id = $1::bigint) AS balance,
       k.id IS NOT NULL AS key_found, k.quota_micros, k.used_micros, k.held_micros
FROM (SELECT 1) AS one LEFT JOIN api_keys AS k ON k.id = $2::bigint
"""

_USAGE_INSERT_COLUMNS = ", ".join(USAGE_COLUMNS)
OVERRUN_COLUMN = USAGE_COLUMNS.index("overrun_micros")  # computed by the statement, not passed


def _usage_values(first: int, overrun: str) -> str:
    """``$first, $first+1, …`` for the usage columns, ``overrun`` in place of overrun_micros."""
    values: list[str] = []
    number = first
    for position in range(len(USAGE_COLUMNS)):
        if position == OVERRUN_COLUMN:
            values.append(overrun)
        else:
            values.append(f"${number}")
            number += 1
    return ", ".join(values)


# $1 request id, $2 user, $3 key (or NULL: the reservation's), $4 cost, $5 used
# at, $6 now, $7 and $8 the keys and users a batch locks first (NULL alone),
# then the usage row's columns. Releases the request's reservation (if the
# sweeper has not), captures its cost (the one ledger row: money that moved),
# moves the user's balance and held amount and the key's used and held
# amounts, and inserts the usage row, all or nothing: a request id recorded
# twice fails on the usage row's unique index and changes nothing. Refused (no
# row back) when the user does not exist or the reservation belongs to another
# user. In a batch (several of these in one transaction, see .batch), the first
# statement locks every key of the batch and then every user, each in id order,
# the order every other statement takes them in (a key before a user), so two
# batches, or a batch and a hold, never wait on each other in a cycle.
RECORD_CHARGED = f"""
WITH locked_keys AS (
    SELECT id FROM api_keys WHERE id = ANY($7::bigint[]) ORDER BY id FOR UPDATE
), locked_users AS (
    SELECT id FROM users WHERE id = ANY($8::bigint[]) AND (SELECT count(*) FROM locked_keys) >= 0
    ORDER BY id FOR UPDATE
), checked AS (
    SELECT EXISTS (SELECT 1 FROM users WHERE id = $2::bigint)
       AND NOT EXISTS (SELECT 1 FROM holds WHERE request_id = $1::text AND user_id <> $2::bigint)
       AND (SELECT count(*) FROM locked_users) >= 0 AS ok
), released AS (
    DELETE FROM holds WHERE request_id = $1::text AND user_id = $2::bigint AND (SELECT ok FROM checked)
    RETURNING amount_micros, key_id
), settled AS (
    SELECT coalesce((SELECT amount_micros FROM released), 0)::bigint AS held,
           coalesce($3::bigint, (SELECT key_id FROM released)) AS key_id
    FROM checked WHERE ok
), charged_key AS (
    UPDATE api_keys SET held_micros = held_micros - s.held, used_micros = used_micros + $4::bigint,
        last_used_at = greatest(coalesce(last_used_at, 0), coalesce($5::double precision, 0))
    FROM settled AS s
    WHERE api_keys.id = s.key_id AND (s.held <> 0 OR $4::bigint <> 0 OR $5::double precision IS NOT NULL)
    RETURNING api_keys.id
), charged AS (
    UPDATE users SET balance_micros = balance_micros - $4::bigint, held_micros = held_micros - s.held
    FROM settled AS s
    WHERE users.id = $2::bigint AND (SELECT count(*) FROM charged_key) >= 0
    RETURNING users.balance_micros AS balance, s.held, s.key_id
), entry AS (
    INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, request_id, key_id, created_at)
    SELECT $2::bigint, 'capture', -$4::bigint, c.balance, $1::text, c.key_id, $6::double precision
    FROM charged AS c WHERE $4::bigint <> 0
), logged AS (
    INSERT INTO usage_logs ({_USAGE_INSERT_COLUMNS})
    SELECT {_usage_values(9, "greatest(0, $4::bigint - c.held)")} FROM charged AS c
)
SELECT $1::text AS request_id, held, balance FROM charged
"""

# the usage row's columns, then $N+1 key (or NULL), $N+2 used at: a request
# nobody pays for (free, or refused before any reservation) is logged and its
# key's last use moved forward, in one statement
_N = len(USAGE_COLUMNS)
RECORD_UNCHARGED = f"""
WITH touched AS (
    UPDATE api_keys SET last_used_at = greatest(coalesce(last_used_at, 0), ${_N + 2}::double precision)
    WHERE id = ${_N + 1}::bigint
)
INSERT INTO usage_logs ({_USAGE_INSERT_COLUMNS}) VALUES ({", ".join(f"${n}" for n in range(1, _N + 1))})
"""

# which of a batch's requests have their usage row: a batch whose connection was
# lost committed when any of them has (a batch is all or nothing)
RECORDED_AMONG = "SELECT request_id FROM usage_logs WHERE request_id = ANY($1::text[])"

# $1 older than, $2 at most this many, $3 now. A reservation is stale when it
# is older than $1 or its owning process's lease ran out before $3. Each one is
# deleted by exactly one sweeper (SKIP LOCKED: another sweeper's, or a
# settlement's, are passed over) and its key's and user's held amounts move
# back, the keys locked before the users, each in id order. No ledger row: no
# money moved.
RELEASE_STALE = """
WITH stale AS (
    DELETE FROM holds WHERE request_id IN (
        SELECT request_id FROM holds
        WHERE created_at < $1::double precision OR (owner IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM hold_owners AS o WHERE o.id = holds.owner AND o.lease_until >= $3::double precision))
        ORDER BY created_at LIMIT $2::bigint FOR UPDATE SKIP LOCKED)
    RETURNING request_id, user_id, key_id, amount_micros
), locked_keys AS (
    SELECT id FROM api_keys WHERE id IN (SELECT key_id FROM stale) ORDER BY id FOR UPDATE
), keys_released AS (
    UPDATE api_keys SET held_micros = held_micros - t.total
    FROM (SELECT key_id, sum(amount_micros)::bigint AS total FROM stale WHERE key_id IS NOT NULL GROUP BY key_id) AS t
    WHERE api_keys.id = t.key_id AND (SELECT count(*) FROM locked_keys) >= 0
    RETURNING api_keys.id
), locked_users AS (
    SELECT id FROM users WHERE id IN (SELECT user_id FROM stale) AND (SELECT count(*) FROM keys_released) >= 0
    ORDER BY id FOR UPDATE
), users_released AS (
    UPDATE users SET held_micros = held_micros - t.total
    FROM (SELECT user_id, sum(amount_micros)::bigint AS total FROM stale GROUP BY user_id) AS t
    WHERE users.id = t.user_id AND (SELECT count(*) FROM locked_users) >= 0
)
SELECT count(*) FROM stale
"""

# budgets that reset (gateway_core.store.budgets: the same statements, numbered)
def _numbered_spent(statement: str) -> str:
    return statement.replace("?1", "$1::text").replace("?2", "$2::bigint").replace("?3", "$3::bigint")


BUDGET_SPENT_BY_KEY = _numbered_spent(_budgets.SPENT_BY_KEY)
BUDGET_SPENT_BY_USER = _numbered_spent(_budgets.SPENT_BY_USER)
# $1 user, $2 key (or NULL): both rows locked in the order every other statement takes them
# (the key first), so that a user's reservations with budgets are checked one at a time
LOCK_OWNERS = (
    "WITH locked_key AS (SELECT id FROM api_keys WHERE id = $2::bigint FOR UPDATE) "
    "SELECT 1 FROM users WHERE id = $1::bigint AND (SELECT count(*) FROM locked_key) >= 0 FOR UPDATE"
)

# the processes that own reservations (see gateway_core.store.hold_owners)
RENEW_OWNER = (
    "INSERT INTO hold_owners (id, replica, pid, started_at, lease_until) VALUES ($1, $2, $3, $4, $5) "
    "ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until"
)
END_LEASES = "UPDATE hold_owners SET lease_until = 0 WHERE id = ANY($1::text[])"
FORGET_OWNERS = (
    "DELETE FROM hold_owners WHERE lease_until < $1 AND NOT EXISTS (SELECT 1 FROM holds WHERE holds.owner = hold_owners.id)"
)
LIVE_OWNERS = (
    "SELECT id, replica, pid, started_at, lease_until FROM hold_owners WHERE id <> $1 AND lease_until >= $2 ORDER BY id"
)

_BREAKER_COLUMNS = [field.name for field in attrs.fields(BreakerReport)]
SAVE_BREAKER = (
    f"INSERT INTO channel_health ({', '.join(_BREAKER_COLUMNS)}) "
    f"VALUES ({', '.join(f'${n}' for n in range(1, len(_BREAKER_COLUMNS) + 1))}) "
    "ON CONFLICT (channel_id, key_slot) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in _BREAKER_COLUMNS if name not in ("channel_id", "key_slot"))
)

LOCK_CHANNEL_KEYS = "SELECT api_keys, disabled_keys FROM channels WHERE id = $1 FOR UPDATE"
SET_DISABLED_KEYS = "UPDATE channels SET disabled_keys = $2 WHERE id = $1"
