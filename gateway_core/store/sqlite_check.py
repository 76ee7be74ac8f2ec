"""Whether a SQLite file can serve, checked by ``relaygate serve`` before it binds.

A file that is not a SQLite database (corrupt, or another kind of file), one cut
short, a SQLite database of another application, or one the gateway cannot write
(a read-only file, directory or mount) is said in one line instead of a traceback
— or, for a read-only file, instead of a gateway that starts and then fails every
request. Then the store migrates itself (new files are created as usual).
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Sequence
from pathlib import Path

from ..sql import Migration
from .connection import connect
from .migrations import apply_migrations

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100


def sqlite_startup_problem(path: str, migrations: Sequence[Migration]) -> str | None:
    """Why the SQLite store cannot serve on ``path``, in one line, or ``None``;
    applies the pending migrations when it can."""
    if path == ":memory:" or path.startswith("file:"):
        return None
    file = Path(path)
    if file.is_dir():
        return f"the database {path} is a directory, not a SQLite file: give a file path with --db"
    if file.exists():
        problem = _header_problem(file)
        if problem is not None:
            return f"the database {path} {problem}: restore it from a backup, or give another --db"
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        conn = connect(path)
    except (OSError, sqlite3.Error) as exc:
        return f"cannot open the database {path}: {exc}"
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "schema_migrations" not in tables:
            shown = ", ".join(sorted(tables)[:5]) + (" …" if len(tables) > 5 else "")
            return f"the database {path} belongs to another application (tables: {shown}): give another --db"
        _write_check(conn)
        apply_migrations(conn, migrations)
    except sqlite3.Error as exc:
        if "readonly" in str(exc) or "read-only" in str(exc):
            return f"the database {path} is read-only ({exc}): the gateway must write to it (and to its directory)"
        return f"the database {path} cannot be used: {exc}"
    finally:
        conn.close()
    return None


def _header_problem(file: Path) -> str | None:
    size = file.stat().st_size
    if size == 0:
        return None  # an empty file: SQLite makes it a database
    with file.open("rb") as handle:
        header = handle.read(HEADER_SIZE)
    if not header.startswith(SQLITE_MAGIC):
        return "is not a SQLite database (a corrupt file, or another kind of file)"
    if len(header) < HEADER_SIZE:
        return "is truncated (shorter than a SQLite header)"
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    pages, change, valid_for = struct.unpack(">I", header[28:32])[0], header[24:28], header[92:96]
    if change == valid_for and pages and pages * page_size > size:
        return f"is truncated ({size} bytes where its header says {pages * page_size})"
    return None


def _write_check(conn: sqlite3.Connection) -> None:
    """A write rolled back: fails on a file, directory or mount the gateway cannot write."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE relaygate_write_check (x INTEGER)")
    finally:
        conn.execute("ROLLBACK")
