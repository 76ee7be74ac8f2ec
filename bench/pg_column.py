"""The PostgreSQL column of the benchmarks: a fresh database on a server, filled
from the SQLite store seeded through the CLI (``relaygate copy-store``, as an
operator moving to PostgreSQL would), the server's CPU, and the usage log's rows."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from cpu import process_tree


def database_url(server: str, name: str) -> str:
    """``server``'s URL naming the database ``name``."""
    parts = urlsplit(server)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


async def fresh_database(server: str) -> str:
    """A new, empty database on ``server`` (a ``postgresql://`` URL): its URL."""
    name = f"relaygate_bench_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(server)
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    return database_url(server, name)


async def drop_database(server: str, url: str) -> None:
    conn = await asyncpg.connect(server)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {urlsplit(url).path.lstrip('/')} WITH (FORCE)")
    finally:
        await conn.close()


def copy_store(relaygate: list[str], sqlite_db: Path, url: str, plugins: Path) -> str:
    """``relaygate copy-store`` from the seeded SQLite file into ``url``; its report."""
    argv = [*relaygate, "copy-store", "--from", f"sqlite:///{sqlite_db}", "--to", url, "--plugins", str(plugins)]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench: relaygate copy-store failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1]


async def postmaster_pid(url: str) -> int:
    """The server's main process (on this machine): the parent of every backend,
    so its process tree's CPU is the server's (backends and background workers)."""
    conn = await asyncpg.connect(url)
    try:
        backend = await conn.fetchval("SELECT pg_backend_pid()")
        with open(f"/proc/{backend}/status") as f:  # while the backend lives
            return next(int(line.split()[1]) for line in f if line.startswith("PPid:"))
    finally:
        await conn.close()


async def usage_log(url: str, sent: int) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow("SELECT count(*) AS rows, count(*) FILTER (WHERE status = 200) AS ok FROM usage_logs")
    finally:
        await conn.close()
    return {"rows": row["rows"], "status_200": row["ok"], "gateway_requests": sent, "complete": row["rows"] == sent}


def pin(postmaster: int, cpu: int) -> int:
    """Pin the server's processes (the postmaster, its backends and workers) to
    ``cpu``, away from the gateway's; new backends inherit it. How many were pinned."""
    pinned = 0
    for pid in process_tree(postmaster):
        try:
            os.sched_setaffinity(pid, {cpu})
            pinned += 1
        except OSError:
            continue
    return pinned
