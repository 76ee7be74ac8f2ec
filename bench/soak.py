"""Soak mode of the overhead bench (``bench/overhead.py --soak SECONDS``): a steady
mixed load through the gateway (every worker alternates a plain request and a
stream), reporting over time the gateway's resident memory (RSS, its process and
children) and its CPU per request, and comparing the RSS after the first 1,000
requests with the RSS at the end (targets: within 10 %, at most 120 MB)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from cpu import cpu_seconds, process_tree
from loadgen import Recorder, Target, new_session, one_request, request_body, stats

FIRST = 1_000
GROWTH_LIMIT_PCT = 10.0
RSS_LIMIT_MB = 120.0


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its live descendants, in MB (VmRSS, kB / 1024)."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return round(total / 1024, 1)


async def soak(target: Target, pid: int, args, say) -> dict[str, Any]:
    bodies = {False: request_body(False), True: request_body(True)}
    rec = Recorder()
    deadline = time.monotonic() + args.soak
    interval = max(2.0, args.soak / 20)

    async def worker(n: int) -> None:
        stream = n % 2 == 1
        while time.monotonic() < deadline:
            await one_request(session, target, bodies[stream], stream, rec)
            stream = not stream

    samples: list[dict[str, Any]] = []
    first: dict[str, Any] = {}
    say(args, f"soak: {args.soak:g} s of mixed plain and streaming requests at concurrency {args.soak_concurrency}, "
              f"a sample every {interval:g} s ...")  # fmt: skip
    async with new_session(args.soak_concurrency) as session:
        started = time.monotonic()
        rss_start = rss_mb(pid)
        last_t, last_n, last_cpu = started, 0, cpu_seconds(pid)
        next_sample = started + interval
        workers = [asyncio.create_task(worker(n)) for n in range(args.soak_concurrency)]
        while not all(w.done() for w in workers):
            await asyncio.sleep(0.2)
            now, done = time.monotonic(), rec.requests
            if not first and done >= FIRST:
                first = {"requests": done, "elapsed_s": round(now - started, 1), "rss_mb": rss_mb(pid)}
            if now >= next_sample or all(w.done() for w in workers):
                cpu = cpu_seconds(pid)
                served = done - last_n
                samples.append({
                    "elapsed_s": round(now - started, 1),
                    "requests": done,
                    "req_per_s": round(served / (now - last_t), 1),
                    "rss_mb": rss_mb(pid),
                    "cpu_ms_per_req": round((cpu - last_cpu) * 1000 / served, 3) if served else None,
                })  # fmt: skip
                say(args, "soak: {elapsed_s:>7} s {requests:>9} requests {req_per_s:>8} req/s  RSS {rss_mb:>6} MB  CPU {cpu_ms_per_req} ms/req".format(**samples[-1]))
                last_t, last_n, last_cpu, next_sample = now, done, cpu, now + interval
        await asyncio.gather(*workers)
    end = samples[-1] if samples else {"rss_mb": rss_mb(pid), "requests": rec.requests}
    out: dict[str, Any] = {
        "seconds": args.soak,
        "concurrency": args.soak_concurrency,
        "rss_start_mb": rss_start,
        "after_first_1000": first or None,
        "rss_end_mb": end["rss_mb"],
        "requests": rec.requests,
        "errors": sum(rec.errors.values()),
        "error_kinds": dict(rec.errors.most_common(5)),
        "latency": stats(rec, time.monotonic() - started),
        "samples": samples,
    }
    if first:
        growth = round(100 * (end["rss_mb"] - first["rss_mb"]) / first["rss_mb"], 1)
        out["rss_growth_pct"] = growth
        out["target_checks"] = [
            {"target": "RSS growth after the first 1,000 requests", "value": growth, "limit": GROWTH_LIMIT_PCT, "unit": "%", "met": abs(growth) <= GROWTH_LIMIT_PCT},
            {"target": "RSS at the end", "value": end["rss_mb"], "limit": RSS_LIMIT_MB, "unit": "MB", "met": end["rss_mb"] <= RSS_LIMIT_MB},
        ]  # fmt: skip
    return out


def print_soak(result: dict[str, Any]) -> None:
    s = result["soak"]
    print(f"\nRelaygate soak — {s['seconds']:g} s, concurrency {s['concurrency']}, plain and streaming requests alternated; "
          f"load average {result['machine'].get('load_average', '-')}")  # fmt: skip
    print(f"{'elapsed s':>9} {'requests':>9} {'req/s':>8} {'RSS MB':>7} {'CPU ms/req':>10}")
    for row in s["samples"]:
        print(f"{row['elapsed_s']:>9} {row['requests']:>9} {row['req_per_s']:>8} {row['rss_mb']:>7} {row['cpu_ms_per_req'] if row['cpu_ms_per_req'] is not None else '-':>10}")
    print(f"requests: {s['requests']} ({s['errors']} errors{', ' + str(s['error_kinds']) if s['errors'] else ''}); RSS before the load {s['rss_start_mb']} MB")
    first = s.get("after_first_1000")
    if not first:
        print(f"fewer than {FIRST} requests: no RSS comparison (run longer)")
        return
    print(f"RSS after the first {first['requests']} requests ({first['elapsed_s']} s): {first['rss_mb']} MB; at the end: {s['rss_end_mb']} MB "
          f"({s['rss_growth_pct']:+g} %)")  # fmt: skip
    for c in s["target_checks"]:
        print(f"target: {c['target']} = {c['value']:g} {c['unit']} (target <= {c['limit']:g} {c['unit']}): {'MET' if c['met'] else 'MISSED'}")
