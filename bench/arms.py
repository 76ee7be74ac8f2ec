"""Interleaved arms: the same load through several targets in one run, so that each
figure is measured beside the floor (the bare proxy) under the same machine load.

An *arm* is one target (direct to the fake upstream, the bare proxy, the gateway,
a peer gateway) and the process whose CPU it costs. At concurrency 1 the arms take
turns request by request (the order rotates every round); at concurrency N each
arm gets ``rounds`` slices of the phase, in an order that reverses every round.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from cpu import Meter, Merged, cpu_figures
from loadgen import Budget, Recorder, Target, closed_loop, ms, new_session, one_request, percentile, stats
from shapes import Shape


@dataclass
class Arm:
    name: str  # "direct", "floor", "gateway", or a peer's name
    target: Target
    process: str  # the key of its process in the bench's pids ("upstream" for direct)


def _served(arm: Arm, requests: int) -> dict[str, int]:
    return {"upstream": requests, arm.process: requests, "loadgen": requests}


def _arm_figures(arm: Arm, rec: Recorder, elapsed: float, cpu: dict[str, Any]) -> dict[str, Any]:
    out = stats(rec, elapsed)
    out["cpu_ms_per_req"] = cpu.get(f"{arm.process}_cpu_ms_per_req")
    out["busy_pct"] = cpu.get(f"{arm.process}_busy_pct")
    out["cpu"] = cpu
    return out


async def interleaved(arms: list[Arm], concurrency: int, shape: Shape, args, pids: dict[str, int], profile=None) -> dict[str, dict[str, Any]]:
    """Concurrency N: ``args.rounds`` slices per arm, order reversed every round. Each
    arm's latency percentiles pool its slices; its CPU per request sums them."""
    body, stream = shape.body, shape.stream
    rounds = max(1, args.rounds)
    recs = {arm.name: Recorder() for arm in arms}
    meters: dict[str, list[Meter]] = {arm.name: [] for arm in arms}
    async with contextlib.AsyncExitStack() as stack:
        sessions = {arm.name: await stack.enter_async_context(new_session(concurrency)) for arm in arms}
        for arm in arms:
            await closed_loop(sessions[arm.name], arm.target, body, stream, concurrency, Budget(args.warmup, None), None)
        for r in range(rounds):
            for arm in arms if r % 2 == 0 else arms[::-1]:
                budget = Budget(args.duration / rounds, None if args.requests is None else max(1, args.requests // rounds))
                if profile is not None and arm.name == "gateway":
                    profile.start()
                with Meter(pids) as meter:
                    await closed_loop(sessions[arm.name], arm.target, body, stream, concurrency, budget, recs[arm.name])
                if profile is not None and arm.name == "gateway":
                    profile.stop()
                meters[arm.name].append(meter)
    out = {}
    for arm in arms:
        total = Merged(meters[arm.name])
        out[arm.name] = _arm_figures(arm, recs[arm.name], total.elapsed, cpu_figures(total, _served(arm, recs[arm.name].requests)))
    base = out[arms[0].name]
    for arm in arms[1:]:
        for key in ("p50_ms", "p99_ms", "first_byte_p50_ms"):
            a, b = out[arm.name].get(key), base.get(key)
            out[arm.name][f"added_{key}"] = None if a is None or b is None else round(a - b, 3)
    return out


async def rotated(arms: list[Arm], shape: Shape, args, pids: dict[str, int], duration: float, profile=None) -> dict[str, dict[str, Any]]:
    """Concurrency 1: one request per arm per round, the order rotating every round.
    The added latency (and time to first byte) of an arm is the median of its
    per-round differences from the first arm (direct)."""
    body, stream = shape.body, shape.stream
    recs = {arm.name: Recorder() for arm in arms}
    diffs: dict[str, list[int]] = {arm.name: [] for arm in arms[1:]}
    fb_diffs: dict[str, list[int]] = {arm.name: [] for arm in arms[1:]}
    async with contextlib.AsyncExitStack() as stack:
        sessions = {arm.name: await stack.enter_async_context(new_session(1)) for arm in arms}
        warm = Budget(args.warmup, None)
        while warm.take():
            for arm in arms:
                await one_request(sessions[arm.name], arm.target, body, stream, None)
        budget = Budget(duration, args.requests)
        turn = 0
        if profile is not None:
            profile.start()
        with Meter(pids) as meter:
            while budget.take():
                got: dict[str, tuple[int, int | None]] = {}
                for i in range(len(arms)):
                    arm = arms[(turn + i) % len(arms)]
                    rec = recs[arm.name]
                    before = len(rec.first_bytes)
                    latency = await one_request(sessions[arm.name], arm.target, body, stream, rec)
                    if latency is not None:
                        got[arm.name] = (latency, rec.first_bytes[-1] if len(rec.first_bytes) > before else None)
                turn += 1
                first = got.get(arms[0].name)
                if first is None:
                    continue
                for arm in arms[1:]:
                    mine = got.get(arm.name)
                    if mine is None:
                        continue
                    diffs[arm.name].append(mine[0] - first[0])
                    if mine[1] is not None and first[1] is not None:
                        fb_diffs[arm.name].append(mine[1] - first[1])
        if profile is not None:
            profile.stop()
    served = {arm.process: recs[arm.name].requests for arm in arms[1:]}
    served["upstream"] = served["loadgen"] = sum(rec.requests for rec in recs.values())
    cpu = cpu_figures(meter, served)
    out = {}
    for arm in arms:
        rec = recs[arm.name]
        out[arm.name] = _arm_figures(arm, rec, sum(rec.latencies) / 1e9, cpu)  # sequential: req/s = 1 / mean latency
        if arm.name == arms[0].name:
            out[arm.name]["cpu_ms_per_req"] = cpu.get("upstream_cpu_ms_per_req")
    for arm in arms[1:]:
        d, f = sorted(diffs[arm.name]), sorted(fb_diffs[arm.name])
        out[arm.name]["added_p50_ms"] = ms(percentile(d, 0.50))
        out[arm.name]["added_p99_ms"] = ms(percentile(d, 0.99))
        out[arm.name]["added_first_byte_p50_ms"] = ms(percentile(f, 0.50))
        out[arm.name]["rounds"] = len(d)
    return out
