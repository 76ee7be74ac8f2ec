"""Where the gateway's CPU goes, from a py-spy ``--format raw --threads`` profile.

``python bench/profile_report.py PROFILE [--cpu-ms-per-req X]`` (``overhead.py
--profile`` calls it with the CPU per request it measured). py-spy samples only
threads that are running, so a share of the samples is a share of the
process's CPU time; multiplied by the measured CPU ms per request it becomes
CPU ms per request.

Three views:

- by component: each sample goes to the innermost frame that belongs to a
  known component (hypercorn, Starlette, our modules, structlog, aiohttp...);
  ``uvloop (C)`` is time with no Python frame below the event loop (socket
  reads and writes, uvloop's own C callbacks);
- by thread (event loop, SQLite writer, readers);
- inclusive time of the busiest functions on the event loop thread (a call
  tree flattened: a function's own time plus what it calls).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]*)(?::(?P<line>\d+))?\)$")

# (component, pattern on the frame's file) — first match from the leaf up wins
COMPONENTS: list[tuple[str, re.Pattern[str]]] = [
    ("structlog + logging", re.compile(r"^(structlog/|logging/)")),
    ("gateway_core/store (writer, SQL)", re.compile(r"^(gateway_core/store/|sqlite_utils/|sqlite3/)")),
    ("gateway_core/request/recorder.py", re.compile(r"^gateway_core/request/recorder\.py")),
    ("gateway_core/request/relay.py", re.compile(r"^gateway_core/request/relay\.py")),
    ("gateway_core/runtime/app.py (request id, dispatch)", re.compile(r"^gateway_core/runtime/app\.py")),
    ("gateway_core/base/asgi.py", re.compile(r"^gateway_core/base/asgi\.py")),
    ("gateway_core/upstream.py", re.compile(r"^gateway_core/upstream\.py")),
    ("gateway_core policies, keys, router", re.compile(r"^gateway_core/(policy|policies/|request/key_cache|routing/router|secrets|key_header)")),
    ("gateway_core context, records, tally, sse", re.compile(r"^gateway_core/(request/context|records|tally|sse|model|channel_type|client_protocol|errors)")),
    ("gateway_core (other)", re.compile(r"^gateway_core/")),
    ("gateway_openai (adapter)", re.compile(r"^gateway_openai/")),
    ("aiohttp client (+yarl, multidict)", re.compile(r"^(aiohttp/|yarl/|multidict/|aiohappyeyeballs/|propcache/)")),
    ("starlette", re.compile(r"^starlette/")),
    ("hypercorn (+h11)", re.compile(r"^(hypercorn/|h11/)")),
    ("attrs", re.compile(r"^(attr/|attrs/|<attrs generated)")),
    ("asyncio (Python parts)", re.compile(r"^asyncio/(?!runners)")),
    ("threads, queues, futures (stdlib)", re.compile(r"^(threading|queue|concurrent/)")),
]
LOOP_ROOT = ("Runner.run", "asyncio/runners.py")


def parse(path: Path) -> list[tuple[str, int | None, list[tuple[str, str]], int]]:
    """(thread name, thread id, frames root first as (function, file), samples) per stack line."""
    stacks = []
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        body, _, count = line.rpartition(" ")
        parts = body.split(";")
        thread, tid = "?", None
        if parts and parts[0].startswith("thread ("):
            head = parts.pop(0)
            m = re.match(r"thread \((0x[0-9a-fA-F]+|\d+)\)", head)
            if m:
                tid = int(m[1], 0)
            thread = head.partition(": ")[2] or head
            thread = re.sub(r"_\d+$", "_N", thread)  # pool threads together
        frames = []
        for part in parts:
            m = FRAME.match(part)
            frames.append((m["func"], m["file"]) if m else (part, ""))
        stacks.append((thread, tid, frames, int(count)))
    return stacks


def component(frames: list[tuple[str, str]]) -> str:
    for func, file in reversed(frames):
        if (func, file) == LOOP_ROOT:
            return "uvloop (C: socket I/O, callbacks)"
        for name, pattern in COMPONENTS:
            if pattern.match(file):
                return name
    return f"other ({frames[-1][1] if frames else '?'})"


def library(file: str) -> str:
    """``libsqlite3.so.0`` → ``libsqlite3``; C sources of extensions by their name."""
    name = file.rsplit("/", 1)[-1]
    for marker in (".so", ".cpython"):
        if marker in name:
            return name.split(marker)[0]
    return name or "?"


def report(path: Path, cpu_ms_per_req: float | None = None, top: int = 30, thread_cpu: dict | None = None) -> str:
    """The three views as text. ``thread_cpu`` (thread id → CPU ms per request,
    measured from /proc) weights each thread's samples by its real CPU time: a
    runnable thread waiting for its core counts as active for py-spy, and with
    every gateway thread pinned to one core that would inflate the busiest one."""
    raw = parse(path)
    samples = sum(n for *_, n in raw)
    if not samples:
        return f"{path}: no samples"
    per_thread: collections.Counter = collections.Counter()
    for _, tid, _, n in raw:
        per_thread[tid] += n
    thread_cpu = {int(k): v for k, v in (thread_cpu or {}).items()}
    weighted = bool(thread_cpu) and any(tid in thread_cpu for tid in per_thread)
    if weighted:
        scale = {tid: thread_cpu.get(tid, 0.0) / n for tid, n in per_thread.items()}
    else:
        scale = {tid: (cpu_ms_per_req or 0.0) / samples for tid in per_thread}
    stacks = [(thread, frames, n * scale[tid] if cpu_ms_per_req or weighted else float(n)) for thread, tid, frames, n in raw]
    total = sum(w for *_, w in stacks)
    in_ms = bool(cpu_ms_per_req or weighted)
    out: list[str] = []

    def row(label: str, w: float) -> str:
        share = 100.0 * w / total if total else 0.0
        value = f"{w:8.4f}" if in_ms else f"{int(w):8d}"
        return f"  {share:5.1f}%  {value}  {label}"

    head = "  share   ms/req  " if in_ms else "  share  samples  "
    how = "samples weighted by each thread's measured CPU" if weighted else "samples scaled to the measured CPU" if in_ms else "samples"
    out.append(f"\nProfile {path}: {samples} samples; {how}" + (f"; {total:.3f} CPU ms per request" if in_ms else ""))

    def table(title: str, counter: collections.Counter, limit: int | None = None) -> None:
        out.append(f"\n{title}")
        out.append(head + title.split(",")[0].split(" ")[0].lower())
        out.extend(row(label, w) for label, w in counter.most_common(limit))

    by_component: collections.Counter[str] = collections.Counter()
    by_thread: collections.Counter[str] = collections.Counter()
    self_time: collections.Counter[str] = collections.Counter()
    native: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    for thread, frames, w in stacks:
        label = component(frames)
        if thread != "MainThread" and not label.startswith("gateway_core/store"):
            label = f"{label} [thread {thread}]"
        by_component[label] += w
        by_thread[thread] += w
        func, file = frames[-1] if frames else ("?", "")
        self_time[f"{func} ({file})"] += w
        if frames and re.search(r"\.(so(\.[\d.]+)?|c|h|cc|cpp|pyx)$", file):
            native[library(file)] += w
        if thread == "MainThread":
            try:
                below = frames[frames.index(LOOP_ROOT) + 1 :]
            except ValueError:
                below = frames
            for name in {f"{f} ({p})" for f, p in below}:
                inclusive[name] += w
    table("Component (innermost known frame):", by_component)
    table("Thread:", by_thread)
    table(f"Self time, top {top} functions (all threads):", self_time, top)
    if native:
        table("Native self time by library (py-spy --native):", native, 15)
    table(f"Inclusive time on the event loop thread, top {top} functions below the loop:", inclusive, top)
    return "\n".join(out)


def perf_report(path: Path, cpu_ms_per_req: float | None = None, top: int = 25) -> str:
    """On-CPU time by shared object (kernel, libpython, SQLite, orjson, uvloop...)
    and the top symbols, from a ``perf record`` file."""
    out = [f"\nperf {path}: on-CPU samples, kernel included" + (f"; {cpu_ms_per_req:.3f} CPU ms per request measured" if cpu_ms_per_req else "")]
    for title, sort, limit in (("Shared object:", "dso", 15), (f"Symbol, top {top}:", "dso,sym", top)):
        done = subprocess.run(
            ["perf", "report", "-i", str(path), "--no-children", "--sort", sort, "--stdio", "-g", "none", "--percent-limit", "0.3"],
            capture_output=True, text=True,
        )
        rows = []
        for line in done.stdout.splitlines():
            m = re.match(r"^\s+([\d.]+)%\s+(.*\S)\s*$", line)
            if m:
                rows.append((float(m[1]), re.sub(r"\s{2,}", "  ", m[2])))
        out.append(f"\n{title}")
        out.append("  share   ms/req  " + sort)
        for share, label in rows[:limit]:
            per_req = f"{share * cpu_ms_per_req / 100:8.4f}" if cpu_ms_per_req else "       -"
            out.append(f"  {share:5.1f}%  {per_req}  {label}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--cpu-ms-per-req", type=float, help="measured CPU ms per request, to turn shares into ms")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--perf", action="store_true", help="PROFILE is a perf.data file")
    parser.add_argument("--thread-cpu", help="JSON object: thread id -> CPU ms per request (from overhead.py --json)")
    args = parser.parse_args(argv)
    if args.perf:
        print(perf_report(args.profile, args.cpu_ms_per_req, args.top))
        return 0
    thread_cpu = json.loads(args.thread_cpu) if args.thread_cpu else None
    print(report(args.profile, args.cpu_ms_per_req, args.top, thread_cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
