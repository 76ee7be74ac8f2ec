"""Seeding the gateway's store through its own CLI, as an operator would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from loadgen import MODEL

UPSTREAM_KEY = "sk-bench-upstream"



def relaygate_command() -> list[str]:
    script = Path(sys.executable).parent / "relaygate"
    if script.exists():
        return [str(script)]
    found = shutil.which("relaygate")
    if found:
        return [found]
    raise SystemExit("bench: the 'relaygate' command is not installed (run 'make install')")



BENCH_PLUGINS = """# written by bench/overhead.py: only what the measured path needs
load = ["openai"]
"""



def cli(args: list[str], db: Path, cwd: Path, plugins: Path) -> str:
    argv = [*relaygate_command(), *args, "--db", str(db), "--plugins", str(plugins)]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench: '{' '.join(['relaygate', *args])}' failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout



def seed(db: Path, cwd: Path, plugins: Path, upstream_url: str, free: bool, key_options: tuple[str, ...] = ()) -> str:
    """A user with money, a priced (or free) model, an ``openai`` channel to the
    upstream; returns an API key (made with ``key_options``: ``("--rpm", "N")``)."""
    cli(["user", "add", "bench"], db, cwd, plugins)
    cli(["wallet", "topup", "bench", "1000000", "--note", "bench"], db, cwd, plugins)
    price = ["--free"] if free else ["--input", "0.01", "--output", "0.02"]
    cli(["price", "set", MODEL, *price], db, cwd, plugins)
    cli(["channel", "add", "bench-upstream", "--type", "openai", "--base-url", upstream_url,
         "--api-key", UPSTREAM_KEY, "--models", MODEL], db, cwd, plugins)  # fmt: skip
    created = json.loads(cli(["key", "create", "bench", "--name", "bench", "--json", *key_options], db, cwd, plugins))
    return created["key"]

