"""The core schema as named migrations, and the runner that applies them.

A migration is ``(name, migrate)`` where ``migrate(schema)`` receives a
:class:`gateway_core.sql.SchemaHandle` (a :class:`~.sqlite_sql.SqliteSchema`
here). Each runs once, in its own ``BEGIN IMMEDIATE`` transaction, and is
recorded in ``schema_migrations`` in that same transaction: two processes
starting at once serialise on the write lock and the second finds the work
done. The core's own migrations are written with sqlite-utils
(:func:`~.sqlite_sql.sqlite_only`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlite3
import time
from collections.abc import Sequence

from ..records import DEFAULT_GROUP, LIMIT_COLUMNS
from ..sql import Migration
from .access_schema import migrate_0007_access_tokens_audit
from .billing_schema import migrate_0003_billing
from .billing_v2_schema import (
    migrate_0008_billing_v2,
    migrate_0009_billing_budgets,
    migrate_0010_billing_prices,
    migrate_0014_budget_buckets,
)
from .connection import atomic
from .health_schema import migrate_0004_channel_health
from .holds_schema import migrate_0015_holds_in_flight
from .ledger_triggers import migrate_0016_ledger_triggers_without_lists
from .ledger_schema import migrate_0006_ledger_money_only
from .sqlite_sql import SqliteSchema, sqlite_only
from .fallbacks import migrate_0013_model_fallbacks
from .stored_responses_schema import migrate_0012_stored_responses
from .signups_schema import migrate_0020_signups
from .teams_schema import migrate_0019_teams
from .usage_hourly import migrate_0017_usage_hourly

if TYPE_CHECKING:  # the migrations are given a sqlite_utils.Database; importing it costs commands that read
    import sqlite_utils


UNIT_RATIO_PPM = 1_000_000
# the kinds 0001's ledger accepts; since 0006 no hold or release row is written
# (wallet.MONEY_KINDS are the kinds the code writes)
LEDGER_KINDS = ("topup", "hold", "capture", "release", "refund", "adjustment")


def apply_migrations(conn: sqlite3.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the pending ``migrations`` (in name order); return the names applied."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    pending = sorted((item for item in migrations if item[0] not in done), key=lambda item: item[0])
    if not pending:
        return []
    schema = SqliteSchema(conn)
    applied: list[str] = []
    for name, migrate in pending:
        with atomic(conn):
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                continue  # another process applied it while we waited for the lock
            migrate(schema)
            conn.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
        applied.append(name)
    return applied


def migrate_0001_core(db: sqlite_utils.Database) -> None:
    """Users, groups, API keys, channels, prices, the ledger and the usage log."""
    db.table("users").create(
        {
            "id": int,
            "name": str,
            "is_admin": int,
            "enabled": int,
            "password_hash": str,
            "balance_micros": int,
            "created_at": float,
        },
        pk="id",
        not_null={"name", "balance_micros", "is_admin", "enabled"},
        defaults={"balance_micros": 0, "is_admin": 0, "enabled": 1},
    )
    db.table("users").create_index(["name"], unique=True)

    db.table("groups").create(
        {"name": str, "ratio_ppm": int, "created_at": float},
        pk="name",
        not_null={"ratio_ppm"},
        defaults={"ratio_ppm": UNIT_RATIO_PPM},
    )
    db.table("groups").insert({"name": DEFAULT_GROUP, "ratio_ppm": UNIT_RATIO_PPM, "created_at": time.time()})
    db.table("user_groups").create(
        {"user_id": int, "group_name": str},
        pk=("user_id", "group_name"),
        foreign_keys=[("user_id", "users", "id"), ("group_name", "groups", "name")],
    )

    db.table("api_keys").create(
        {
            "id": int,
            "user_id": int,
            "name": str,
            "key_hash": str,
            "prefix": str,
            "group_name": str,
            "quota_micros": int,
            "used_micros": int,
            "expires_at": float,
            "models": str,
            "allow_ips": str,
            "enabled": int,
            "deleted": int,
            "created_at": float,
            "last_used_at": float,
        },
        pk="id",
        foreign_keys=[("user_id", "users", "id"), ("group_name", "groups", "name")],
        not_null={"key_hash", "used_micros", "enabled", "deleted"},
        defaults={"used_micros": 0, "enabled": 1, "deleted": 0, "models": "[]", "allow_ips": "[]"},
    )
    db.table("api_keys").create_index(["key_hash"], unique=True)
    db.table("api_keys").create_index(["user_id", "id"])

    db.table("channels").create(
        {
            "id": int,
            "name": str,
            "type": str,
            "base_url": str,
            "api_keys": str,
            "models": str,
            "model_map": str,
            "groups": str,
            "priority": int,
            "weight": int,
            "enabled": int,
            "endpoints": str,
            "headers": str,
            "settings": str,
            "created_at": float,
        },
        pk="id",
        not_null={"name", "type", "priority", "weight", "enabled"},
        defaults={"priority": 0, "weight": 1, "enabled": 1},
    )
    db.table("channels").create_index(["name"], unique=True)

    db.table("prices").create(
        {
            "model": str,
            "input_micros_per_mtok": int,
            "output_micros_per_mtok": int,
            "cached_input_micros_per_mtok": int,
            "cache_write_micros_per_mtok": int,
            "free": int,
            "updated_at": float,
        },
        pk="model",
        not_null={"input_micros_per_mtok", "output_micros_per_mtok", "free"},
        defaults={"input_micros_per_mtok": 0, "output_micros_per_mtok": 0, "free": 0},
    )

    _create_ledger(db)
    _create_usage_logs(db)


def _create_ledger(db: sqlite_utils.Database) -> None:
    db.table("ledger").create(
        {
            "id": int,
            "user_id": int,
            "kind": str,
            "amount_micros": int,
            "balance_after_micros": int,
            "request_id": str,
            "note": str,
            "created_at": float,
        },
        pk="id",
        foreign_keys=[("user_id", "users", "id")],
        not_null={"user_id", "kind", "amount_micros", "balance_after_micros"},
    )
    db.table("ledger").create_index(["user_id", "id"])
    db.table("ledger").create_index(["request_id"])
    kinds = ", ".join(f"'{kind}'" for kind in LEDGER_KINDS)
    db.execute(
        "CREATE TRIGGER ledger_kind_check BEFORE INSERT ON ledger "
        f"WHEN NEW.kind NOT IN ({kinds}) "
        "BEGIN SELECT RAISE(ABORT, 'ledger: unknown kind'); END"
    )
    db.execute(
        "CREATE TRIGGER ledger_append_only_update BEFORE UPDATE ON ledger "
        "BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END"
    )
    db.execute(
        "CREATE TRIGGER ledger_append_only_delete BEFORE DELETE ON ledger "
        "BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END"
    )


def _create_usage_logs(db: sqlite_utils.Database) -> None:
    db.table("usage_logs").create(
        {
            "id": int,
            "request_id": str,
            "created_at": float,
            "user_id": int,
            "key_id": int,
            "key_name": str,
            "protocol": str,
            "endpoint": str,
            "model": str,
            "upstream_model": str,
            "channel_id": int,
            "channel_name": str,
            "stream": int,
            "input_tokens": int,
            "output_tokens": int,
            "cached_tokens": int,
            "cost_micros": int,
            "estimated": int,
            "duration_ms": float,
            "first_token_ms": float,
            "status": int,
            "end_reason": str,
            "error_type": str,
            "error_message": str,
            "upstream_status": int,
            "upstream_error": str,
            "client_ip": str,
            "client_request_id": str,
            "attempts": str,
        },
        pk="id",
        not_null={"request_id", "created_at"},
    )
    table = db.table("usage_logs")
    table.create_index(["request_id"], unique=True)
    for columns in (["key_id", "id"], ["model", "id"], ["status", "id"], ["user_id", "id"], ["created_at"]):
        table.create_index(columns)




def migrate_0002_limits(db: sqlite_utils.Database) -> None:
    """Rate limits: requests and tokens per minute, requests in flight.

    On ``groups`` they are the defaults for the users of the group's keys; on
    ``users`` they override those defaults; on ``api_keys`` they cap one key.
    ``NULL`` means not set (a user then gets its group's defaults); ``0`` means
    unlimited.
    """
    for table in ("groups", "users", "api_keys"):
        for column in LIMIT_COLUMNS:
            db.table(table).add_column(column, int)


def migrate_0005_user_group_order(db: sqlite_utils.Database) -> None:
    """The order in which a user's groups were opened to them, as a column
    (``ordinal``): SQLite keeps it in the rowid, PostgreSQL has no rowid, and
    ``relaygate copy-store`` moves it between the two. A trigger numbers new rows."""
    db.execute("ALTER TABLE user_groups ADD COLUMN ordinal INTEGER")
    db.execute("UPDATE user_groups SET ordinal = rowid")
    db.execute(
        "CREATE TRIGGER user_groups_ordinal AFTER INSERT ON user_groups WHEN NEW.ordinal IS NULL "
        "BEGIN UPDATE user_groups SET ordinal = NEW.rowid WHERE rowid = NEW.rowid; END"
    )


def migrate_0011_user_sessions_after(db: sqlite_utils.Database) -> None:
    """``users.sessions_after`` (Unix time): sign-ins started before it are over
    (a front such as the console checks it). Set when a password is changed or
    reset and when a user is disabled or enabled again."""
    db.execute("ALTER TABLE users ADD COLUMN sessions_after REAL")


def migrate_0018_user_deleted(db: sqlite_utils.Database) -> None:
    """``users.deleted_at`` (Unix time): a deleted user keeps its row (name, balance,
    ledger and usage rows are history) but can never be enabled, sign in or call."""
    db.execute("ALTER TABLE users ADD COLUMN deleted_at REAL")


CORE_MIGRATIONS: list[Migration] = [
    ("0001_core", sqlite_only(migrate_0001_core)),
    ("0002_limits", sqlite_only(migrate_0002_limits)),
    ("0003_billing", sqlite_only(migrate_0003_billing)),
    ("0004_channel_health", sqlite_only(migrate_0004_channel_health)),
    ("0005_user_group_order", sqlite_only(migrate_0005_user_group_order)),
    ("0006_ledger_money_only", sqlite_only(migrate_0006_ledger_money_only)),
    ("0007_access_tokens_audit", sqlite_only(migrate_0007_access_tokens_audit)),
    ("0008_billing_v2", sqlite_only(migrate_0008_billing_v2)),
    ("0009_billing_budgets", sqlite_only(migrate_0009_billing_budgets)),
    ("0010_billing_prices", sqlite_only(migrate_0010_billing_prices)),
    ("0011_user_sessions_after", sqlite_only(migrate_0011_user_sessions_after)),
    ("0012_stored_responses", sqlite_only(migrate_0012_stored_responses)),
    ("0013_model_fallbacks", sqlite_only(migrate_0013_model_fallbacks)),
    ("0014_budget_buckets", sqlite_only(migrate_0014_budget_buckets)),
    ("0015_holds_in_flight", sqlite_only(migrate_0015_holds_in_flight)),
    ("0016_ledger_triggers_without_lists", sqlite_only(migrate_0016_ledger_triggers_without_lists)),
    ("0017_usage_hourly", sqlite_only(migrate_0017_usage_hourly)),
    ("0018_user_deleted", sqlite_only(migrate_0018_user_deleted)),
    ("0019_teams", sqlite_only(migrate_0019_teams)),
    ("0020_signups", sqlite_only(migrate_0020_signups)),
]
