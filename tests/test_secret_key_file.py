"""Upstream keys are sealed by default: ``relaygate init`` creates the database's
secret-key file (mode 0600) when no ``RELAYGATE_SECRET_KEY`` is set, the command
line and the gateway use it, and ``serve`` warns in one line about keys stored in
the clear."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gateway_core.commands.cli import main
from gateway_core.store.sealing import SEALED
from gateway_core.testing import free_port

RELAYGATE = Path(sys.executable).parent / "relaygate"


@pytest.fixture(autouse=True)
def no_secret_in_the_environment(monkeypatch, tmp_path):
    for name in ("RELAYGATE_SECRET_KEY", "RELAYGATE_SECRET_KEY_FILE", "RELAYGATE_DB", "RELAYGATE_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text('load = ["demo"]\n')


def cli(db: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["--db", str(db), *argv])
    return status, out.getvalue(), err.getvalue()


def stored_keys(db: Path) -> str:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return " ".join(row[0] for row in conn.execute("SELECT api_keys FROM channels ORDER BY id"))


@pytest.mark.usefixtures("bundled_adapters")  # the CLI adds a demo channel
def test_init_creates_the_key_file_once_and_keys_are_sealed_with_it(tmp_path):
    db = tmp_path / "data" / "relaygate.db"
    status, out, err = cli(db, "init")
    key_file = db.parent / "secret.key"
    assert status == 0, err
    assert f"Created the secret key that seals upstream keys at rest: {key_file} (back it up apart from the database)" in out
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key_file.read_text().strip()) >= 43
    first = key_file.read_text()
    status, out, _ = cli(db, "init")
    assert status == 0 and "Created the secret key" not in out and key_file.read_text() == first  # never replaced
    assert cli(db, "channel", "add", "up", "--type", "demo", "--base-url", "local://demo", "--models", "m", "--api-key", "sk-upstream-secret-1")[0] == 0
    assert "sk-upstream-secret-1" not in stored_keys(db) and SEALED in stored_keys(db)
    status, out, err = cli(db, "channel", "list", "--json")
    assert status == 0 and "sk-upstream-secret-1" not in out + err  # opened for use, never printed

    key_file.rename(tmp_path / "elsewhere.key")  # a lost key file: the sealed keys cannot be opened, said in one line
    status, _, err = cli(db, "channel", "list")
    assert status != 0 and err.count("\n") == 1 and "sealed with a secret key" in err


@pytest.mark.usefixtures("bundled_adapters")  # init's first channel is the demo adapter's
def test_an_environment_secret_key_means_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAYGATE_SECRET_KEY", "an operator's own secret")
    db = tmp_path / "relaygate.db"
    status, out, err = cli(db, "init", "--json")
    assert status == 0, err
    assert '"secret_key_file": null' in out and not (tmp_path / "secret.key").exists()


@pytest.mark.usefixtures("bundled_adapters")  # relaygate serve with the demo channel init made
def test_serve_warns_in_one_line_about_keys_in_the_clear(tmp_path):
    db = tmp_path / "relaygate.db"
    assert cli(db, "migrate")[0] == 0
    assert cli(db, "channel", "add", "up", "--type", "demo", "--base-url", "local://demo", "--models", "m", "--api-key", "sk-plain-1")[0] == 0
    assert "sk-plain-1" in stored_keys(db)  # no key file, no secret key: stored as given
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RELAYGATE_SECRET")}, "RELAYGATE_HOME": str(tmp_path / "home")}
    server = subprocess.Popen([str(RELAYGATE), "serve", "--db", str(db), "--port", str(port)], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            lines.append(line)
            if "serving" in line or not line:
                break
        warned = [line for line in lines if "in the clear" in line]
        assert len(warned) == 1 and "1 channel(s) hold upstream keys in the clear" in warned[0], lines
        assert "sk-plain-1" not in "".join(lines)
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
