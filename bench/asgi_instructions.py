"""Instructions per request of the gateway's app and the floor's, counted by
valgrind: a figure the machine's load does not move.

``python bench/asgi_instructions.py [--arms gateway,floor] [--small 100] [--large 400] [--stream] [--tokens N --pace MS] [--agent]``

Runs ``bench/asgi_path.py`` under ``valgrind --tool=callgrind`` twice per arm,
with ``--small`` and ``--large`` measured requests (concurrency 1 by default: the
same work each time, no batching that depends on timing), and divides the
difference of the two instruction totals by the difference of the request
counts: start-up, seeding and warm-up cancel out. Every thread of the process is
counted (the SQLite writer too); the fake upstream runs outside valgrind. About
a minute per run. Needs ``valgrind`` on the PATH.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOTAL = re.compile(r"Collected : (\d+)")


def total_of(tool: str, returncode: int, stderr: str) -> int:
    """The instructions callgrind reported at the end of a run (``tool`` names the bench in an error)."""
    found = TOTAL.search(stderr)
    if returncode != 0 or found is None:
        raise SystemExit(f"{tool}: the run failed ({returncode}):\n{stderr[-2000:]}")
    return int(found.group(1))


def per_request_of(run: Callable[[int], int], small: int, large: int) -> float:
    """Instructions of one request: ``run(n)`` counts a whole run of ``n`` requests;
    start-up, warm-up and shutdown cancel out in the difference of two runs."""
    return (run(large) - run(small)) / (large - small)


def instructions(arm: str, requests: int, args: argparse.Namespace, out: Path) -> int:
    argv = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
        sys.executable, str(HERE / "asgi_path.py"), "--arms", arm, "--requests", str(requests), "--rounds", "1",
        "--warmup", str(args.warmup), "--concurrency", str(args.concurrency),
        *(["--stream"] if args.stream else []), *(["--free"] if args.free else []), *(["--agent"] if args.agent else []),
        "--tokens", str(args.tokens), "--pace", str(args.pace),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True)
    return total_of("asgi_instructions", done.returncode, done.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--arms", default="gateway,floor")
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--free", action="store_true")
    parser.add_argument("--tokens", type=int, default=0, help="streams of this many content chunks (bench/shapes.py)")
    parser.add_argument("--pace", type=float, default=0.0, help="milliseconds between a --tokens stream's chunks")
    parser.add_argument("--agent", action="store_true", help="the coding agent's body")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("asgi_instructions: valgrind is not installed")
    per_request: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="relaygate-callgrind-") as tmp:
        for arm in args.arms.split(","):
            per_request[arm] = per_request_of(lambda n: instructions(arm, n, args, Path(tmp) / f"{arm}.{n}"), args.small, args.large)
            print(f"{arm:8} {per_request[arm] / 1000:10.1f} thousand instructions per request", flush=True)
    if "gateway" in per_request and "floor" in per_request:
        print(f"gateway / floor = {per_request['gateway'] / per_request['floor']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
