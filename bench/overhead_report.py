"""The overhead bench's report: the machine, the table, the targets, the gateway's own records."""

from __future__ import annotations

import collections
import importlib.metadata
import os
import platform
import sqlite3
from pathlib import Path
from typing import Any

import orjson


def machine() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for dist in ("relaygate", "hypercorn", "h11", "uvloop", "starlette", "aiohttp", "orjson", "structlog", "sqlite-utils"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "sqlite": sqlite3.sqlite_version,
        "packages": versions,
    }



def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)



def print_table(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"\nRelaygate gateway overhead — {m['cpu_model']}, nproc {m['nproc']}, Python {m['python']}, "
          f"SQLite {m['sqlite']}, kernel {m['kernel']}")  # fmt: skip
    billing = "free model (no reservation)" if result["config"].get("free") else "priced model (reservation + settlement per request)"
    print(f"placement: {result['placement']}; fake upstream: {result['config']['chunks']} stream chunks; {billing}")
    header = (
        f"{'scenario':<10} {'target':<15} {'ok':>7} {'err':>4} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'+p50 ms':>8} {'+p99 ms':>8} {'rps ratio':>9} {'p50 ratio':>9} {'CPU ms/req':>10} {'core %':>6}"
    )
    print(header)
    print("-" * len(header))
    for s in result["scenarios"]:
        if s["scenario"] == "floor":
            v, c = s["server"], s["cpu"]
            print(
                f"{'floor':<10} {s['title']:<15} {v['ok']:>7} {v['errors']:>4} {fmt(v['rps'], 0):>8} {fmt(v['p50_ms']):>7} "
                f"{fmt(v['p99_ms']):>7} {'':>8} {'':>8} {'':>9} {'':>9} {fmt(c['server_cpu_ms_per_req'], 3):>10} {fmt(c['server_busy_pct'], 0):>6}"
            )
            if "c1_added_p50_ms" in s:
                print(
                    f"{'':<10} {'  at c1':<15} {'':>7} {'':>4} {'':>8} {fmt(s['c1_p50_ms']):>7} {'':>7} {fmt(s['c1_added_p50_ms']):>8} "
                    f"{fmt(s['c1_added_p99_ms']):>8} {'':>9} {'':>9} {fmt(s['c1_cpu_ms_per_req'], 3):>10}"
                )
            continue
        d, g, c = s["direct"], s["gateway"], s["cpu"]
        up = (s.get("direct_cpu") or c).get("upstream_cpu_ms_per_req")
        rps_ratio = g["rps"] / d["rps"] if d["rps"] else None
        p50_ratio = g["p50_ms"] / d["p50_ms"] if d["p50_ms"] and g["p50_ms"] else None
        up_busy = (s.get("direct_cpu") or {}).get("upstream_busy_pct")
        print(
            f"{s['scenario']:<10} {'direct':<15} {d['ok']:>7} {d['errors']:>4} {fmt(d['rps'], 0):>8} {fmt(d['p50_ms']):>7} {fmt(d['p99_ms']):>7} "
            f"{'':>8} {'':>8} {'':>9} {'':>9} {fmt(up, 3):>10} {fmt(up_busy, 0):>6}"
        )
        print(
            f"{'':<10} {'gateway':<15} {g['ok']:>7} {g['errors']:>4} {fmt(g['rps'], 0):>8} {fmt(g['p50_ms']):>7} {fmt(g['p99_ms']):>7} "
            f"{fmt(s['added_p50_ms']):>8} {fmt(s['added_p99_ms']):>8} {fmt(rps_ratio):>9} {fmt(p50_ratio):>9} "
            f"{fmt(c['gateway_cpu_ms_per_req'], 3):>10} {fmt(c['gateway_busy_pct'], 0):>6}"
        )
        if s["stream"]:
            print(f"{'':<10} {'  first byte':<15} {'':>7} {'':>4} {'':>8} {fmt(d.get('first_byte_p50_ms')):>7} direct / "
                  f"{fmt(g.get('first_byte_p50_ms'))} gateway p50 ms")  # fmt: skip
    print()
    print("CPU ms/req: direct rows = the fake upstream's CPU per request; gateway rows = the gateway's")
    print("(every thread, from /proc) per request served; floor rows = the hello server's. core % = that process's busy share of one CPU.")
    print("+p50/+p99: c1 = median/p99 of paired differences (direct and gateway requests alternated);")
    print("           c50/stream50 = gateway-phase percentile minus direct-phase percentile.")
    print("req/s at c1 = 1 / mean latency (requests are sequential). ratios = gateway / direct.")
    print("floor 'at c1' rows: the hello server alternated with the fake upstream (a hop that does nothing, vs raw asyncio).")
    for s in result["scenarios"]:
        stores = [f"{name} {s['cpu'][f'{name}_cpu_ms_per_req']:.3f}" for name in ("postgres", "redis") if s.get("cpu", {}).get(f"{name}_cpu_ms_per_req") is not None]
        if stores:
            print(f"{s['scenario']}: CPU ms per gateway request of the stores: {', '.join(stores)}")
    for s in result["scenarios"]:
        for side in ("direct", "gateway", "server"):
            v = s.get(side)
            if v and v["errors"]:
                print(f"ERRORS {s['scenario']} {side}: {v['errors']} — {v['error_kinds']}")
    steals = [
        f"{s['scenario'] if s['scenario'] != 'floor' else s['title']}: {max(c.get('steal_pct_by_cpu', {}).values(), default=0):g}%"
        for s in result["scenarios"]
        for c in (s["cpu"], s.get("direct_cpu") or {})
        if c and max(c.get("steal_pct_by_cpu", {}).values(), default=0) >= 1
    ]
    if steals:
        print("hypervisor steal time (max over CPUs) during phases: " + ", ".join(steals))
    foreign = [
        (f"{s['scenario'] if s['scenario'] != 'floor' else s['title']}{'' if c is s['cpu'] else ' direct'}", c)
        for s in result["scenarios"]
        for c in (s["cpu"], s.get("direct_cpu"))
        if c
    ]
    worst = max((c.get("foreign_cpu_pct", 0) for _, c in foreign), default=0)
    print(f"other processes' CPU during the phases: at most {worst:g}% of one CPU" + (" — THE MACHINE WAS BUSY, figures are not clean:" if worst >= 5 else ""))
    for name, c in foreign:
        if c.get("foreign_cpu_pct", 0) >= 5:
            top = ", ".join(f"{n} {v:g}%" for n, v in c.get("foreign_cpu_top_pct", {}).items())
            print(f"    {name}: {c['foreign_cpu_pct']:g}% ({top})")
    for s in result["scenarios"]:
        c = s["cpu"]
        if "gateway_main_thread_cpu_ms_per_req" in c:
            print(
                f"gateway CPU ms/req by thread, {s['scenario']}: event loop {c['gateway_main_thread_cpu_ms_per_req']:.3f}, "
                f"other threads (SQLite writer, readers) {c['gateway_other_threads_cpu_ms_per_req']:.3f}"
            )
    if "gateway_idle_cpu_ms_per_s" in result:
        print(f"idle gateway (before the load): {result['gateway_idle_cpu_ms_per_s']:g} CPU ms per second")
    usage = result.get("usage_log")
    if usage:
        print(f"usage log: {usage['rows']} rows ({usage['status_200']} with status 200) for {usage['gateway_requests']} gateway requests sent (warm-ups included)")
    for line in result.get("gateway_log_problems", []):
        print(f"gateway log: {line}")
    if usage and not usage.get("complete"):
        print("usage log: MISMATCH — every gateway request should leave exactly one row")
    for verdict in result["targets"]:
        print(f"target: {verdict}")



def targets(result: dict[str, Any]) -> list[str]:
    out = []
    by = {s["scenario"]: s for s in result["scenarios"]}
    if "c1" in by:
        v = by["c1"]["added_p50_ms"]
        out.append(f"p50 added latency at concurrency 1 = {fmt(v, 3)} ms (target <= 1 ms): {'MET' if v is not None and v <= 1 else 'MISSED'}")
    for name in ("c50", "c1"):
        if name in by:
            v = by[name]["cpu"]["gateway_cpu_ms_per_req"]
            out.append(f"gateway CPU per non-streaming request ({name}) = {fmt(v, 3)} ms (target <= 1 ms): {'MET' if v is not None and v <= 1 else 'MISSED'}")
            break
    return out



def usage_log(db: Path, sent: int) -> dict[str, Any] | None:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows, ok = conn.execute("SELECT count(*), sum(status = 200) FROM usage_logs").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return {"error": str(exc), "rows": None, "status_200": None, "gateway_requests": sent}
    return {"rows": rows, "status_200": ok, "gateway_requests": sent, "complete": rows == sent}



def last_exception(path: Path) -> str:
    """The end of the last logged exception in the gateway's log (JSON lines)."""
    found = ""
    try:
        with open(path, "rb") as f:
            for line in f:
                if b'"exception"' in line:
                    try:
                        found = orjson.loads(line).get("exception", "")
                    except orjson.JSONDecodeError:
                        continue
    except OSError:
        return ""
    return "\n".join(found.splitlines()[-4:])



def log_problems(path: Path, limit: int = 8) -> list[str]:
    """Warnings and errors in the gateway's log (JSON lines), counted by event."""
    counts: collections.Counter[str] = collections.Counter()
    try:
        with open(path, "rb") as f:
            for line in f:
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError:
                    if line.strip() and b" INFO " not in line:
                        counts[f"(not JSON) {line.strip()[:120].decode(errors='replace')}"] += 1
                    continue
                if isinstance(event, dict) and event.get("level") not in (None, "info", "debug"):
                    counts[f"{event.get('level')}: {event.get('event')}"] += 1
    except OSError:
        return []
    return [f"{n} x {text}" for text, n in counts.most_common(limit)]

