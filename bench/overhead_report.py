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
        "load_average": " ".join(f"{v:.2f}" for v in os.getloadavg()),
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
          f"SQLite {m['sqlite']}, kernel {m['kernel']}, load average {m.get('load_average', '-')}")  # fmt: skip
    billing = "free model (no reservation)" if result["config"].get("free") else "priced model (reservation + settlement per request)"
    config = result["config"]
    servers = f"servers: gateway on {config.get('server', 'hypercorn')}, floor on {config.get('floor_server') or config.get('server', 'hypercorn')}"
    print(f"placement: {result['placement']}; {servers}; fake upstream: {config['chunks']} stream chunks; {billing}")
    if "peer_versions" in result:
        print("peers: " + ", ".join(f"{name} {version}" for name, version in result["peer_versions"].items()))
    w = max([13, *(len(s["scenario"]) for s in result["scenarios"])])
    header = (
        f"{'scenario':<{w}} {'arm':<16} {'ok':>7} {'err':>4} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'+p50 ms':>8} {'+p99 ms':>8} {'+TTFB ms':>8} {'CPU ms/req':>10} {'× floor':>7} {'core %':>6}"
    )
    print(header)
    print("-" * len(header))
    for s in result["scenarios"]:
        if s["scenario"] == "hello":
            v, c = s["server"], s["cpu"]
            print(
                f"{'hello':<{w}} {s['title']:<16} {v['ok']:>7} {v['errors']:>4} {fmt(v['rps'], 0):>8} {fmt(v['p50_ms']):>7} "
                f"{fmt(v['p99_ms']):>7} {fmt(v.get('added_p50_ms')):>8} {'':>8} {'':>8} {fmt(v['cpu_ms_per_req'], 3):>10} {'':>7} {fmt(v['busy_pct'], 0):>6}"
            )
            print(f"{'':<{w}} {'  at c1':<16} {'':>7} {'':>4} {'':>8} {fmt(s['c1_p50_ms']):>7} {'':>7} {fmt(s['c1_added_p50_ms']):>8} "
                  f"{fmt(s['c1_added_p99_ms']):>8} {'':>8} {fmt(s['c1_cpu_ms_per_req'], 3):>10}")  # fmt: skip
            continue
        ratios = s.get("ratios_to_floor", {})
        for i, (arm, v) in enumerate(s["arms"].items()):
            times = (ratios.get(arm) or {}).get("cpu_ms_per_req")
            busy = v["busy_pct"] if s["concurrency"] > 1 else None
            print(
                f"{s['scenario'] if i == 0 else '':<{w}} {arm:<16} {v['ok']:>7} {v['errors']:>4} {fmt(v['rps'], 0):>8} {fmt(v['p50_ms']):>7} "
                f"{fmt(v['p99_ms']):>7} {fmt(v.get('added_p50_ms')):>8} {fmt(v.get('added_p99_ms')):>8} "
                f"{fmt(v.get('added_first_byte_p50_ms')):>8} {fmt(v['cpu_ms_per_req'], 3):>10} {fmt(times):>7} {fmt(busy, 0):>6}"
            )
    print()
    print("arms: direct = the fake upstream itself; floor = bench/bare_proxy.py (Starlette on the same hypercorn, one shared")
    print("aiohttp session, forwards the body); gateway = relaygate serve. Floor, gateway and peers run on the same CPU.")
    print("CPU ms/req: the arm's process (every thread and child, from /proc) per request it served; direct = the fake upstream's.")
    print("× floor = CPU ms/req over the floor's in the same scenario. core % = that process's busy share of one CPU.")
    print("+p50/+p99/+TTFB (time to first byte): at c1 the arms take turns (order rotating), medians of per-round")
    print("differences from direct; at c50 the arms run in interleaved slices, percentile differences from direct.")
    print("req/s at c1 = 1 / mean latency (requests are sequential).")
    for s in result["scenarios"]:
        stores = [f"{name} {s['cpu'][f'{name}_cpu_ms_per_req']:.3f}" for name in ("postgres", "redis") if s.get("cpu", {}).get(f"{name}_cpu_ms_per_req") is not None]
        if stores:
            print(f"{s['scenario']}: CPU ms per gateway request of the stores: {', '.join(stores)}")
    for s in result["scenarios"]:
        for arm, v in s.get("arms", {"server": s.get("server")}).items():
            if v and v["errors"]:
                print(f"ERRORS {s['scenario']} {arm}: {v['errors']} — {v['error_kinds']}")
    cpus = [
        (f"{s['scenario'] if s['scenario'] != 'hello' else s['title']} {arm}", v["cpu"])
        for s in result["scenarios"]
        for arm, v in s.get("arms", {"server": s.get("server")}).items()
        if v and "cpu" in v
    ]
    steals = [f"{name}: {max(c.get('steal_pct_by_cpu', {}).values(), default=0):g}%" for name, c in cpus if max(c.get("steal_pct_by_cpu", {}).values(), default=0) >= 1]
    if steals:
        print("hypervisor steal time (max over CPUs) during phases: " + ", ".join(steals))
    worst = max((c.get("foreign_cpu_pct", 0) for _, c in cpus), default=0)
    print(f"other processes' CPU during the phases: at most {worst:g}% of one CPU" + (" — THE MACHINE WAS BUSY, figures are not clean:" if worst >= 5 else ""))
    seen = set()
    for name, c in cpus:
        if c.get("foreign_cpu_pct", 0) >= 5 and id(c) not in seen:
            seen.add(id(c))
            top = ", ".join(f"{n} {v:g}%" for n, v in c.get("foreign_cpu_top_pct", {}).items())
            print(f"    {name}: {c['foreign_cpu_pct']:g}% ({top})")
    for s in result["scenarios"]:
        c = s.get("cpu") or {}
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


def _check(name: str, value: float | None, limit: float | None, unit: str, rule: str) -> dict[str, Any]:
    met = value is not None and limit is not None and value <= limit
    return {"target": name, "value": value, "limit": None if limit is None else round(limit, 3), "unit": unit, "rule": rule, "met": met}


def target_checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets against the floor measured in the same run."""
    by = {s["scenario"]: s["arms"] for s in result["scenarios"] if "arms" in s}
    out = []

    def gateway_and_floor(scenario: str, key: str) -> tuple[float | None, float | None] | None:
        arms = by.get(scenario)
        if not arms or "gateway" not in arms or "floor" not in arms:
            return None
        return arms["gateway"].get(key), arms["floor"].get(key)

    for scenario, what, times in (
        ("c50", "CPU per non-streaming request at c50", 1.5),
        ("stream50", "CPU per stream at c50", 1.3),
        ("paced50", "CPU per paced stream (20 chunks) at c50", 1.1),
        ("paced500", "CPU per paced stream (500 chunks) at c50", 1.1),
        ("agent10", "CPU per coding-agent request at c10", 1.2),
        ("agentstream50", "CPU per coding-agent stream at c50", 1.2),
    ):
        pair = gateway_and_floor(scenario, "cpu_ms_per_req")
        if pair:
            out.append(_check(what, pair[0], None if pair[1] is None else times * pair[1], "ms", f"<= {times} x floor"))
    for scenario, key, what, margin in (
        ("c1", "added_p50_ms", "p50 added latency at c1", 0.3),
        ("stream1", "added_first_byte_p50_ms", "time to first token added at c1", 0.5),
    ):
        pair = gateway_and_floor(scenario, key)
        if pair:
            out.append(_check(what, pair[0], None if pair[1] is None else pair[1] + margin, "ms", f"<= floor + {margin} ms"))
    return out


def targets(result: dict[str, Any]) -> list[str]:
    return [
        f"{c['target']} = {fmt(c['value'], 3)} {c['unit']} (target {c['rule']} = {fmt(c['limit'], 3)}): {'MET' if c['met'] else 'MISSED'}"
        for c in result.get("target_checks", [])
    ]


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

