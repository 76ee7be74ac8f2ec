"""Teams on SQLite (``docs/teams.md``): a team, its account (the ``users`` row that
is its wallet), its members and their keys. The SQL is written with ``?``
placeholders for both stores (PostgreSQL numbers them: :mod:`.postgres.admin_teams`)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from .team_records import TeamMember, TeamRecord
from .connection import atomic, fetch_all, fetch_one, inserted_id
from .keys import create_key, get_key
from .users import add_user, delete_user

TEAM_SELECT = "SELECT id, name, account_id, created_at, deleted_at FROM teams"
MEMBER_SELECT = (
    "SELECT m.team_id, t.name AS team_name, m.user_id, u.name AS user_name, m.role, m.created_at "
    "FROM team_members AS m JOIN teams AS t ON t.id = m.team_id JOIN users AS u ON u.id = m.user_id"
)
INSERT_TEAM = "INSERT INTO teams (name, account_id, created_at) VALUES (?, ?, ?)"
RENAME_TEAM = "UPDATE teams SET name = ? WHERE id = ? AND deleted_at IS NULL"
RENAME_ACCOUNT = "UPDATE users SET name = ? WHERE id = ?"
DELETE_TEAM = "UPDATE teams SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL"
DELETE_MEMBERS = "DELETE FROM team_members WHERE team_id = ?"
UPSERT_MEMBER = (
    "INSERT INTO team_members (team_id, user_id, role, created_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role"
)
DELETE_MEMBER = "DELETE FROM team_members WHERE team_id = ? AND user_id = ?"
# a removed member's keys in the team are deleted with the membership (their usage rows keep them)
DELETE_MEMBER_KEYS = "UPDATE api_keys SET deleted = 1, enabled = 0 WHERE user_id = ? AND member_id = ? AND deleted = 0"
SET_KEY_MEMBER = "UPDATE api_keys SET member_id = ? WHERE id = ?"


def team_record(row: Any) -> TeamRecord:
    return TeamRecord(row["id"], row["name"], row["account_id"], row["created_at"], row["deleted_at"] is not None)


def member_record(row: Any) -> TeamMember:
    return TeamMember(row["team_id"], row["team_name"], row["user_id"], row["user_name"], row["role"], row["created_at"])


def create_team(conn: sqlite3.Connection, name: str, account: str, groups: Sequence[str]) -> TeamRecord:
    """The team and its account (no password, opened to ``groups``), in one transaction."""
    with atomic(conn):
        account_id = add_user(conn, account, groups=groups)
        team_id = inserted_id(conn.execute(INSERT_TEAM, (name, account_id, time.time())))
    found = get_team(conn, team_id)
    assert found is not None
    return found


def get_team(conn: sqlite3.Connection, team_id: int) -> TeamRecord | None:
    row = fetch_one(conn, f"{TEAM_SELECT} WHERE id = ?", (team_id,))
    return team_record(row) if row else None


def find_team(conn: sqlite3.Connection, name: str) -> TeamRecord | None:
    row = fetch_one(conn, f"{TEAM_SELECT} WHERE name = ?", (name,))
    return team_record(row) if row else None


def list_teams(conn: sqlite3.Connection) -> list[TeamRecord]:
    return [team_record(row) for row in fetch_all(conn, f"{TEAM_SELECT} ORDER BY id")]


def rename_team(conn: sqlite3.Connection, team_id: int, name: str, account: str) -> bool:
    with atomic(conn):
        team = get_team(conn, team_id)
        if team is None or conn.execute(RENAME_TEAM, (name, team_id)).rowcount == 0:
            return False
        conn.execute(RENAME_ACCOUNT, (account, team.account_id))
    return True


def delete_team(conn: sqlite3.Connection, team_id: int) -> bool:
    """The team deleted for good, with its account (every key of the team deleted:
    its wallet, ledger and usage rows stay) and its memberships, in one transaction."""
    with atomic(conn):
        team = get_team(conn, team_id)
        if team is None or conn.execute(DELETE_TEAM, (time.time(), team_id)).rowcount == 0:
            return False
        delete_user(conn, team.account_id)
        conn.execute(DELETE_MEMBERS, (team_id,))
    return True


def set_member(conn: sqlite3.Connection, team_id: int, user_id: int, role: str) -> None:
    conn.execute(UPSERT_MEMBER, (team_id, user_id, role, time.time()))


def remove_member(conn: sqlite3.Connection, team_id: int, user_id: int) -> bool:
    """The membership ended and the member's keys in the team deleted, in one transaction."""
    with atomic(conn):
        team = get_team(conn, team_id)
        if team is None or conn.execute(DELETE_MEMBER, (team_id, user_id)).rowcount == 0:
            return False
        conn.execute(DELETE_MEMBER_KEYS, (team.account_id, user_id))
    return True


def list_members(conn: sqlite3.Connection, team_id: int) -> list[TeamMember]:
    return [member_record(row) for row in fetch_all(conn, f"{MEMBER_SELECT} WHERE m.team_id = ? ORDER BY u.name", (team_id,))]


def memberships(conn: sqlite3.Connection, user_id: int) -> list[TeamMember]:
    """The teams a user is in (live ones), with their role in each."""
    sql = f"{MEMBER_SELECT} WHERE m.user_id = ? AND t.deleted_at IS NULL ORDER BY t.name"
    return [member_record(row) for row in fetch_all(conn, sql, (user_id,))]


def create_team_key(conn: sqlite3.Connection, account_id: int, member_id: int | None, fields: dict[str, Any]) -> tuple[Any, str]:
    """A key paid by the team's account: a member's (``member_id``) or the team's own
    (a service key), in one transaction."""
    with atomic(conn):
        key_id, secret = create_key(conn, account_id, **fields)
        if member_id is not None:
            conn.execute(SET_KEY_MEMBER, (member_id, key_id))
    return get_key(conn, key_id), secret
