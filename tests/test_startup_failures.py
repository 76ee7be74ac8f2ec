"""``relaygate serve`` refusing to start: each failure is one line on standard error
and exit status 2 (a configuration, argument or database file to fix), never a
traceback, and never a gateway that starts and then fails every request."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

RELAYGATE = Path(sys.executable).parent / "relaygate"


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYGATE_")}
    return subprocess.run(
        [str(RELAYGATE), "serve", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def refused(done: subprocess.CompletedProcess[str], said: str) -> None:
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("relaygate"), done.stderr
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.fixture
def good_db(tmp_path: Path, bundled_adapters: None) -> Path:
    """A database ``relaygate init`` made (its first channel is the demo adapter's)."""
    path = tmp_path / "good.db"
    subprocess.run([str(RELAYGATE), "init", "--db", str(path)], check=True, capture_output=True, cwd=tmp_path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def test_a_corrupt_database_file(tmp_path):
    (tmp_path / "corrupt.db").write_bytes(b"garbage, not a database" * 100)
    refused(serve(tmp_path, "--db", "corrupt.db"), "corrupt.db is not a SQLite database")


def test_a_truncated_database_file(tmp_path, good_db):
    cut = tmp_path / "cut.db"
    shutil.copy(good_db, cut)
    os.truncate(cut, cut.stat().st_size // 2)
    refused(serve(tmp_path, "--db", str(cut)), "is truncated")


def test_another_applications_database(tmp_path):
    conn = sqlite3.connect(tmp_path / "theirs.db")
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    refused(serve(tmp_path, "--db", "theirs.db"), "belongs to another application (tables: invoices)")
    conn = sqlite3.connect(tmp_path / "theirs.db")
    assert [row[0] for row in conn.execute("SELECT name FROM sqlite_master")] == ["invoices"]  # left untouched


def test_a_read_only_database_file(tmp_path, good_db):
    if os.geteuid() == 0:  # root writes through file modes: make the file immutable instead
        if subprocess.run(["chattr", "+i", str(good_db)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here")
    else:
        good_db.chmod(0o444)
    try:
        refused(serve(tmp_path, "--db", str(good_db)), "is read-only")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(good_db)], check=True)


def test_a_port_in_use(tmp_path, good_db):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused(serve(tmp_path, "--db", str(good_db), "--port", str(port)), f"cannot listen on 127.0.0.1:{port}: Address already in use")


@pytest.mark.parametrize("args, said", [
    (("--host", "no-such-host.invalid"), "cannot listen on 'no-such-host.invalid'"),
    (("--host", "300.1.1.1"), "cannot listen on '300.1.1.1'"),
    (("--port", "70000"), "--port must be from 0 to 65535, not 70000"),
    (("--port", "eighty"), "invalid int value"),
])  # fmt: skip
def test_a_bad_host_or_port(tmp_path, good_db, args, said):
    refused(serve(tmp_path, "--db", str(good_db), *args), said)


def test_a_plugin_named_twice(tmp_path, good_db):
    (tmp_path / "plugins.toml").write_text('load = ["demo", "openai", "demo"]\n')
    refused(serve(tmp_path, "--db", str(good_db)), "plugins.toml: plugin(s) named twice in 'load': 'demo'")
