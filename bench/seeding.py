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



LIMITS = ["--rpm", "100000000", "--tpm", "1000000000", "--concurrency", "10000"]  # counted, never reached


def seed(db: Path, cwd: Path, plugins: Path, upstream_url: str, free: bool, limits: bool = False, key_options: tuple[str, ...] = ()) -> str:
    """A user with money, a priced (or free) model, an ``openai`` channel to the upstream; returns an API key.
    With ``limits``, the key has request, token and concurrency limits and the channel a
    concurrency cap, all too high to be reached: every request counts them. ``key_options`` are
    added to the key's creation (``("--rpm", "N")``)."""
    cli(["user", "add", "bench"], db, cwd, plugins)
    cli(["wallet", "topup", "bench", "1000000", "--note", "bench"], db, cwd, plugins)
    price = ["--free"] if free else ["--input", "0.01", "--output", "0.02"]
    cli(["price", "set", MODEL, *price], db, cwd, plugins)
    cap = ["--concurrency", "10000"] if limits else []
    cli(["channel", "add", "bench-upstream", "--type", "openai", "--base-url", upstream_url,
         "--api-key", UPSTREAM_KEY, "--models", MODEL, *cap], db, cwd, plugins)  # fmt: skip
    created = json.loads(cli(["key", "create", "bench", "--name", "bench", "--json", *(LIMITS if limits else []), *key_options], db, cwd, plugins))
    return created["key"]

