"""Throughput with ``relaygate serve --workers 2`` on two CPUs against one worker on one.

``.venv/bin/python bench/workers_scaling.py`` (about a minute; ``make bench-workers``)
seeds a SQLite store through the CLI (a priced model, a channel to
``bench/fast_upstream.py``, a key), then, for ``--rounds`` rounds, each time
in the other order, starts

- **1 worker**: ``relaygate serve`` pinned to one CPU (``taskset -c 0``);
- **2 workers**: ``relaygate serve --workers 2`` allowed both CPUs (``taskset -c 0,1``);
- **2 pinned**: the same with ``--pin-workers`` (each worker's threads on one of the two);

and drives each with a closed loop of non-streaming chat requests at
``--concurrency`` for ``--duration`` seconds after ``--warmup`` seconds. The
load generator is ``bench/raw_load.py`` (about 6 µs of CPU per request, against
about 70 µs for aiohttp), so that what it takes from the two workers' CPUs
stays small; the fake upstream costs a few µs more. Both run on CPU 1: beside
the second worker, as on a machine with two CPUs there is nowhere else, and away
from the lone worker of the first arm. Reported: requests
per second of each arm (its rounds summed), the ratio of the two against the
issue's target (2 workers, pinned or not, ≥ 1.8 × one), how busy the gateway's processes were,
and what the load generator and the upstream took. Every answer is checked, and
every request must leave one usage-log row; either failing makes the exit
status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import uvloop
from cpu import Meter
from loadgen import Budget, Recorder, Target, request_body, stats
from overhead import smoke
from overhead_report import machine
from processes import Child, free_port, wait_http
from raw_load import raw_closed_loop
from seeding import relaygate_command, seeded_workdir

TARGET_RATIO = 1.8
ARMS = {"1 worker": (1, "0", ()), "2 workers": (2, "0,1", ()), "2 pinned": (2, "0,1", ("--pin-workers",))}  # name: (workers, CPUs given, options)
SEVERAL = ("2 workers", "2 pinned")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--duration", type=float, default=8.0, help="measured seconds per arm and round (default 8)")
    p.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds of load first (default 2)")
    p.add_argument("--concurrency", type=int, default=64, help="requests in flight (default 64)")
    p.add_argument("--rounds", type=int, default=2, help="rounds, the arms' order reversed each time (default 2)")
    p.add_argument("--server", choices=("hypercorn", "uvicorn"), default="hypercorn")
    p.add_argument("--json", action="store_true", help="print the results as JSON (and nothing else on stdout)")
    return p.parse_args(argv)


def usage_rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM usage_logs").fetchone()[0])


async def run_arm(name: str, args: argparse.Namespace, workdir: Path, key: str, upstream_pid: int) -> dict[str, Any]:
    """One round of one arm: start the gateway, warm up, measure, stop."""
    workers, cpus, options = ARMS[name]
    if max(int(c) for c in cpus.split(",")) >= (os.cpu_count() or 1):
        raise SystemExit(f"bench: this arm needs CPUs {cpus}; the machine has {os.cpu_count()}")
    port = free_port()
    db = workdir / "relaygate.db"
    argv = ["taskset", "-c", cpus, *relaygate_command(), "serve", "--db", str(db), "--plugins", str(workdir / "plugins.toml"),
            "--port", str(port), "--server", args.server, *(["--workers", str(workers)] if workers > 1 else []), *options]  # fmt: skip
    child = Child(name, argv, workdir / f"{name.replace(' ', '-')}.log", workdir)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/healthz", child, timeout=60)
        await smoke(Target(name, base, key), child)
        if workers > 1:
            await asyncio.sleep(3)  # every worker listening, not only the first
        url, body = base + "/v1/chat/completions", request_body(False)
        rows_before = usage_rows(db)
        sent = Recorder()
        await raw_closed_loop(url, key, body, args.concurrency, Budget(args.warmup, None), sent)
        rec = Recorder()
        with Meter({"gateway": child.pid, "upstream": upstream_pid}) as meter:
            await raw_closed_loop(url, key, body, args.concurrency, Budget(args.duration, None), rec)
        status = child.stop()
        rows = usage_rows(db) - rows_before
    finally:
        child.stop()
    requests = sent.requests + rec.requests
    out = stats(rec, meter.elapsed)
    out.update(
        workers=workers, cpus=cpus, stopped_with=status, requests_sent=requests, usage_rows=rows,
        cpu_s={name: round(seconds, 3) for name, seconds in meter.cpu.items()},
        elapsed_s=round(meter.elapsed, 3), foreign_cpu_pct=meter.foreign_pct,
    )  # fmt: skip
    return out


def summary(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Each arm's rounds summed; the ratio and the target's check."""
    arms: dict[str, Any] = {}
    for name in ARMS:
        runs = [r[name] for r in rounds]
        ok, elapsed = sum(r["ok"] for r in runs), sum(r["elapsed_s"] for r in runs)
        cpu = {part: sum(r["cpu_s"][part] for r in runs) for part in runs[0]["cpu_s"]}
        arms[name] = {
            "rps": round(ok / elapsed, 1),
            "rps_by_round": [r["rps"] for r in runs],
            "p50_ms_by_round": [r["p50_ms"] for r in runs],
            "gateway_busy_cpus": round(cpu["gateway"] / elapsed, 2),
            "gateway_cpu_ms_per_req": round(1000 * cpu["gateway"] / ok, 3) if ok else None,
            "load_and_upstream_busy_cpus": round((cpu["loadgen"] + cpu["upstream"]) / elapsed, 2),
            "foreign_cpu_pct": max(r["foreign_cpu_pct"] for r in runs),
            "errors": sum(r["errors"] for r in runs),
            "missing_usage_rows": sum(r["requests_sent"] - r["usage_rows"] for r in runs),
        }
    one = arms["1 worker"]["rps"]
    ratios = {name: round(arms[name]["rps"] / one, 2) if one else 0.0 for name in SEVERAL}
    ratio = max(ratios.values())
    return {
        "arms": arms,
        "ratio": ratios["2 workers"],
        "ratios": ratios,
        "target": {"target": "throughput with --workers 2 on two CPUs (pinned or not)", "value": ratio, "limit": TARGET_RATIO,
                   "unit": "x one worker on one CPU", "met": ratio >= TARGET_RATIO},  # fmt: skip
    }


def print_report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"\nRelaygate workers scaling — {m['cpu_model']}, nproc {m['nproc']}, load average {m['load_average']}, server {result['server']}")
    print(f"concurrency {result['concurrency']}, {result['rounds']} round(s) of {result['duration_s']:g} s per arm; priced model, SQLite")
    print(f"{'arm':<10} {'CPUs':>5} {'req/s':>8} {'by round':>18} {'p50 ms':>14} {'gateway CPUs':>13} {'CPU ms/req':>11} {'load+upstream CPUs':>19}")
    for name, arm in result["arms"].items():
        cpus = ARMS[name][1]
        rounds = ", ".join(f"{v:.0f}" for v in arm["rps_by_round"])
        p50 = ", ".join(f"{v:.1f}" for v in arm["p50_ms_by_round"] if v is not None)
        print(f"{name:<10} {cpus:>5} {arm['rps']:>8.0f} {rounds:>18} {p50:>14} {arm['gateway_busy_cpus']:>13.2f} "
              f"{arm['gateway_cpu_ms_per_req']:>11.3f} {arm['load_and_upstream_busy_cpus']:>19.2f}")  # fmt: skip
        if arm["errors"] or arm["missing_usage_rows"]:
            print(f"  {name}: {arm['errors']} wrong answer(s), {arm['missing_usage_rows']} request(s) without a usage-log row")
        if arm["foreign_cpu_pct"] > 10:
            print(f"  {name}: other processes of the machine used up to {arm['foreign_cpu_pct']:.0f} % of a CPU meanwhile")
    print("× one worker: " + ", ".join(f"{name} {value:.2f}" for name, value in result["ratios"].items()))
    t = result["target"]
    print(f"target: {t['target']} = {t['value']:.2f} x one worker on one CPU (target >= {t['limit']:g}): {'MET' if t['met'] else 'MISSED'}")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rounds: list[dict[str, dict[str, Any]]] = []
    os.sched_setaffinity(0, {1})  # the load beside the fake upstream: one worker gets CPU 0 to itself
    with seeded_workdir("relaygate-workers-") as (workdir, _upstream_url, key):
        upstream_pid = upstream_of(workdir)
        for number in range(args.rounds):
            order = list(ARMS) if number % 2 == 0 else list(reversed(ARMS))
            done: dict[str, dict[str, Any]] = {}
            for name in order:
                print(f"round {number + 1}: {name} ...", file=sys.stderr, flush=True)
                done[name] = await run_arm(name, args, workdir, key, upstream_pid)
            rounds.append(done)
    result = {"machine": machine(), "server": args.server, "concurrency": args.concurrency, "rounds": args.rounds,
              "duration_s": args.duration, "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              **summary(rounds), "runs": rounds}  # fmt: skip
    return result


def upstream_of(workdir: Path) -> int:
    """The fake upstream's pid: the child of this process serving the bench (seeding.seeded_workdir)."""
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    upstreams = [int(pid) for pid in children if b"fast_upstream.py" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    if len(upstreams) != 1:
        raise SystemExit(f"bench: expected one fake upstream among this process's children, found {len(upstreams)}")
    return upstreams[0]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = uvloop.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    wrong = any(arm["errors"] or arm["missing_usage_rows"] for arm in result["arms"].values())
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
