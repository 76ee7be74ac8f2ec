"""Groups: named price ratios that users are opened to and channels serve."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable

from .group_names import group_name_problem
from ..records import GroupRecord
from .connection import atomic, fetch_all
from .limits import LimitChanges, set_group_limits
from .migrations import UNIT_RATIO_PPM


def ensure_groups(conn: sqlite3.Connection, names: Iterable[str]) -> list[str]:
    """Create the groups that do not exist yet (ratio 1); return the names created."""
    created = []
    now = time.time()
    for name in dict.fromkeys(names):
        check_group_name(name)
        cursor = conn.execute(
            'INSERT OR IGNORE INTO "groups" (name, ratio_ppm, created_at) VALUES (?, ?, ?)',
            (name, UNIT_RATIO_PPM, now),
        )
        if cursor.rowcount:
            created.append(name)
    return created


def set_group_ratio(conn: sqlite3.Connection, name: str, ratio_ppm: int) -> None:
    """Create or update a group; ``ratio_ppm`` multiplies prices (1,000,000 = ×1)."""
    check_group_name(name)
    check_ratio(ratio_ppm)
    conn.execute(
        'INSERT INTO "groups" (name, ratio_ppm, created_at) VALUES (?, ?, ?) '
        "ON CONFLICT (name) DO UPDATE SET ratio_ppm = excluded.ratio_ppm",
        (name, ratio_ppm, time.time()),
    )


def group_ratios(conn: sqlite3.Connection) -> dict[str, int]:
    """Every group's ratio in parts per million, by name."""
    return {name: ratio for name, ratio in conn.execute('SELECT name, ratio_ppm FROM "groups" ORDER BY name')}


def list_groups(conn: sqlite3.Connection) -> list[GroupRecord]:
    """Every group with its members and live keys counted, by name."""
    return [GroupRecord(**dict(row)) for row in fetch_all(conn, LIST_GROUPS)]


LIST_GROUPS = (
    "SELECT g.name, g.ratio_ppm, g.created_at, g.rpm, g.tpm, g.concurrency, "
    "(SELECT count(*) FROM user_groups AS ug WHERE ug.group_name = g.name) AS members, "
    "(SELECT count(*) FROM api_keys AS k WHERE k.group_name = g.name AND k.deleted = 0) AS keys "
    'FROM "groups" AS g ORDER BY g.name'
)


def save_group(conn: sqlite3.Connection, name: str, ratio_ppm: int | None, limits: LimitChanges) -> GroupRecord:
    """Create a group if it is missing (ratio 1), then change its ratio (when given)
    and its default rate limits; return it as stored."""
    with atomic(conn):
        ensure_groups(conn, [name])
        if ratio_ppm is not None:
            set_group_ratio(conn, name, ratio_ppm)
        set_group_limits(conn, name, limits)
    return next(group for group in list_groups(conn) if group.name == name)


def check_ratio(ratio_ppm: int) -> None:
    if ratio_ppm < 0:
        raise ValueError("a group's ratio must not be negative")


def check_group_name(name: str) -> None:
    """Refuse a name that is not :data:`gateway_core.store.group_names.GROUP_NAME`."""
    problem = group_name_problem(name)
    if problem is not None:
        raise ValueError(problem)
