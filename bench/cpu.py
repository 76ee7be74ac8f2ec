"""CPU time from /proc: per process (all threads, live children), per thread,
per CPU (steal, busy), and a :class:`Meter` that takes it over one phase."""

from __future__ import annotations

import gc
import os
import resource
import time
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")

THREADED = ("gateway", "server")  # processes whose CPU is also reported per thread
PER_GATEWAY_REQUEST = ("postgres", "redis")  # processes whose CPU is counted per request the gateway served



def process_tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (hypercorn workers with ``--workers``)."""
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as f:
                    todo.extend(int(p) for p in f.read().split())
        except OSError:
            continue
    return pids



def cpu_seconds(pid: int) -> float:
    """utime+stime of ``pid`` (every thread) and its live descendants, in seconds."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / CLK_TCK



def cpu_ticks() -> dict[int, tuple[int, int, int]]:
    """Per CPU, from /proc/stat: (steal ticks, busy ticks, all ticks). Steal is time
    the hypervisor gave to other guests; busy is everything but idle, iowait and steal."""
    out: dict[int, tuple[int, int, int]] = {}
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("cpu") and line[3].isdigit():
                    name, *values = line.split()
                    ticks = [int(v) for v in values[:8]] + [0] * 8
                    idle, iowait, steal = ticks[3], ticks[4], ticks[7]
                    total = sum(ticks[:8])
                    out[int(name[3:])] = (steal, total - idle - iowait - steal, total)
    except OSError:
        pass
    return out



def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """utime+stime of each live thread of ``pid`` and its descendants, by thread id."""
    out: dict[int, float] = {}
    for p in process_tree(pid):
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue
            out[int(tid)] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    return out



def all_processes_cpu() -> dict[int, tuple[str, float]]:
    """Every live process: (name, utime+stime seconds), by pid."""
    out: dict[int, tuple[str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.find("(") + 1 : text.rfind(")")]
        fields = text.rpartition(")")[2].split()
        out[int(entry)] = (name, (int(fields[11]) + int(fields[12])) / CLK_TCK)
    return out


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime



class Meter:
    """CPU seconds of the watched processes and of this load generator over a phase."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.start_cpu: dict[str, float] = {}

    def __enter__(self) -> Meter:
        self.start_cpu = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self.start_cpu["loadgen"] = own_cpu_seconds()
        self.start_threads = {name: thread_cpu_seconds(pid) for name, pid in self.pids.items() if name in THREADED}
        self.start_ticks = cpu_ticks()
        self.start_all = all_processes_cpu()
        gc.collect()
        gc.disable()  # no collector pauses in the load generator while measuring
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.elapsed = time.perf_counter() - self.started
        gc.enable()
        end = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        end["loadgen"] = own_cpu_seconds()
        self.cpu = {name: end[name] - self.start_cpu[name] for name in end}
        self.threads = {}  # name -> {tid: cpu seconds over the phase}
        for name, before in self.start_threads.items():
            after = thread_cpu_seconds(self.pids[name])
            self.threads[name] = {tid: after[tid] - before.get(tid, 0.0) for tid in after if after[tid] - before.get(tid, 0.0) > 0}
        ticks = cpu_ticks()
        self.steal_pct = {
            cpu: round(100 * (ticks[cpu][0] - s0) / max(1, ticks[cpu][2] - t0), 1)
            for cpu, (s0, _, t0) in self.start_ticks.items()
            if cpu in ticks
        }
        # CPU used by processes other than the bench's own (processes that both
        # started and ended during the phase are missed), in % of one CPU
        ours = {os.getpid()}
        for pid in self.pids.values():
            ours.update(process_tree(pid))
        others: dict[str, float] = {}
        for pid, (name, seconds) in all_processes_cpu().items():
            if pid not in ours:
                used = seconds - self.start_all.get(pid, (name, 0.0))[1]
                if used > 0:
                    others[name] = others.get(name, 0.0) + used
        self.foreign_pct = round(100 * sum(others.values()) / self.elapsed, 1) if self.elapsed else 0.0
        self.foreign_top = {n: round(100 * v / self.elapsed, 1) for n, v in sorted(others.items(), key=lambda kv: -kv[1])[:3]} if self.elapsed else {}



def cpu_figures(meter: "Meter | Merged", served: dict[str, int]) -> dict[str, Any]:
    """CPU ms per request of each process (``served``: requests each one handled)."""
    out: dict[str, Any] = {}
    for name, seconds in meter.cpu.items():
        count = served.get(name, served.get("gateway", 0) if name in PER_GATEWAY_REQUEST else 0)
        out[f"{name}_cpu_s"] = round(seconds, 3)
        out[f"{name}_cpu_ms_per_req"] = round(seconds * 1000 / count, 3) if count else None
        out[f"{name}_busy_pct"] = round(100 * seconds / meter.elapsed, 1) if meter.elapsed else None
    out["steal_pct_by_cpu"] = meter.steal_pct
    out["foreign_cpu_pct"] = meter.foreign_pct
    out["foreign_cpu_top_pct"] = meter.foreign_top
    for name, threads in meter.threads.items():
        count = served.get(name, 0)
        if not count or not threads:
            continue
        main = meter.pids[name]
        out[f"{name}_main_thread_cpu_ms_per_req"] = round(threads.get(main, 0.0) * 1000 / count, 3)
        out[f"{name}_other_threads_cpu_ms_per_req"] = round(sum(v for t, v in threads.items() if t != main) * 1000 / count, 3)
        out[f"{name}_thread_cpu_ms_per_req"] = {str(t): round(v * 1000 / count, 4) for t, v in sorted(threads.items())}
    return out



class Merged:
    """Several :class:`Meter` phases of one arm taken as one: CPU, time and threads
    summed, steal at its worst, other processes' share weighted by time."""

    def __init__(self, meters: list[Meter]) -> None:
        self.pids = meters[0].pids
        self.elapsed = sum(m.elapsed for m in meters)
        self.cpu = {name: sum(m.cpu[name] for m in meters) for name in meters[0].cpu}
        self.threads: dict[str, dict[int, float]] = {}
        for m in meters:
            for name, threads in m.threads.items():
                into = self.threads.setdefault(name, {})
                for tid, seconds in threads.items():
                    into[tid] = into.get(tid, 0.0) + seconds
        self.steal_pct = {cpu: max(m.steal_pct.get(cpu, 0.0) for m in meters) for cpu in meters[0].steal_pct}
        self.foreign_pct = round(sum(m.foreign_pct * m.elapsed for m in meters) / self.elapsed, 1) if self.elapsed else 0.0
        self.foreign_top = max(meters, key=lambda m: m.foreign_pct).foreign_top
