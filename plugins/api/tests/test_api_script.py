"""The Python script of the plugin's README.md ("A script: a customer, a payment, a key, its
usage") runs as written against a gateway on loopback: the documentation stays true."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

from gateway_core.commands.cli import main

DOC = Path(__file__).resolve().parents[1] / "README.md"


def script() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## A script: a customer, a payment, a key, its usage") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_documented_script_runs(seed, start_gateway):
    seed.user("admin", admin=True)
    gateway = start_gateway()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--db", seed.config.db_path, "token", "create", "admin", "--scope", "admin", "--json"]) == 0
    token = json.loads(out.getvalue())["token"]
    code = script().replace("http://127.0.0.1:8080", gateway.url)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(DOC), "exec"), {"ADMIN_TOKEN": token})  # noqa: S102 - our own documentation
    lines = printed.getvalue().splitlines()
    assert lines[0] == "25.00 False" and lines[1] == "0 micro-USD spent"
    assert lines[2:] == ["key acme-prod daily 0.00 of 5.00 USD", "key acme-prod monthly 0.00 of 20.00 USD"]
    assert seed.rows("SELECT balance_micros FROM users WHERE name = 'acme'")[0]["balance_micros"] == 25_000_000
