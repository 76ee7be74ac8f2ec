"""Seeding the gateway's store through its own CLI, as an operator would."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
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
load = ["openai", "anthropic", "gemini"]
"""

# the model each channel type serves (the openai channel's is loadgen.MODEL)
CHANNEL_MODELS = {"openai": MODEL, "anthropic": "bench-anthropic", "gemini": "bench-gemini"}



def cli(args: list[str], db: Path, cwd: Path, plugins: Path) -> str:
    argv = [*relaygate_command(), *args, "--db", str(db), "--plugins", str(plugins)]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench: '{' '.join(['relaygate', *args])}' failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout



@contextlib.contextmanager
def seeded_workdir(prefix: str, *, chunks: int = 20, free: bool = False) -> Iterator[tuple[Path, str, str]]:
    """A temporary directory with ``plugins.toml`` and a seeded database whose channel
    calls ``bench/fast_upstream.py``, started here on CPU 1 (when there are two):
    ``(directory, the upstream's URL, the bench key)``; the upstream stops after."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        workdir = Path(tmp)
        plugins = workdir / "plugins.toml"
        plugins.write_text(BENCH_PLUGINS)
        from processes import free_port

        port = free_port()
        pin = ["taskset", "-c", "1"] if (os.cpu_count() or 1) >= 2 else []
        upstream_process = subprocess.Popen(
            [*pin, sys.executable, str(Path(__file__).resolve().parent / "fast_upstream.py"), "--port", str(port), "--chunks", str(chunks)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert upstream_process.stdout is not None
            upstream_process.stdout.readline()  # "ready"
            upstream = f"http://127.0.0.1:{port}"
            yield workdir, upstream, seed(workdir / "relaygate.db", workdir, plugins, upstream, free=free)
        finally:
            upstream_process.terminate()
            upstream_process.wait()


LIMITS = ["--rpm", "100000000", "--tpm", "1000000000", "--concurrency", "10000"]  # counted, never reached


def seed(db: Path, cwd: Path, plugins: Path, upstream_url: str, free: bool, limits: bool = False, key_options: tuple[str, ...] = ()) -> str:
    """A user with money, and a priced (or free) model on each of an ``openai``, an
    ``anthropic`` and a ``gemini`` channel to the upstream (``CHANNEL_MODELS``); returns an API key.
    With ``limits``, the key has request, token and concurrency limits and the channel a
    concurrency cap, all too high to be reached: every request counts them. ``key_options`` are
    added to the key's creation (``("--rpm", "N")``)."""
    cli(["migrate"], db, cwd, plugins)  # every command but init, serve and migrate needs the database to exist
    cli(["user", "add", "bench"], db, cwd, plugins)
    cli(["wallet", "topup", "bench", "1000000", "--note", "bench"], db, cwd, plugins)
    price = ["--free"] if free else ["--input", "0.01", "--output", "0.02"]
    cap = ["--concurrency", "10000"] if limits else []
    for kind, model in CHANNEL_MODELS.items():
        cli(["price", "set", model, *price], db, cwd, plugins)
        name = "bench-upstream" if kind == "openai" else f"bench-{kind}"
        cli(["channel", "add", name, "--type", kind, "--base-url", upstream_url,
             "--api-key", UPSTREAM_KEY, "--models", model, *cap], db, cwd, plugins)  # fmt: skip
    created = json.loads(cli(["key", "create", "bench", "--name", "bench", "--json", *(LIMITS if limits else []), *key_options], db, cwd, plugins))
    return created["key"]

