"""Pinning a gateway process to one CPU (``relaygate serve --pin-workers``).

A gateway process runs two busy threads, the event loop and the SQLite store's
group-commit writer, which share the interpreter's lock (``sqlite3`` gives it up
around every statement). On two CPUs both run at once, each wants the lock while
the other holds it and sleeps until it is given: about 4.7 context switches per
request against 0.85 on one CPU, and a quarter more CPU per request. Pinned, each
worker keeps its threads on one CPU of its own, as nginx's ``worker_cpu_affinity
auto`` does: two workers on two CPUs answered 1.57–1.66 times one worker's
requests, against 1.07–1.29 unpinned (docs/performance.md, "Workers").

Worker ``n`` (1…N) gets the ``n``-th CPU the server was allowed to use,
counting round when there are more workers than CPUs. Linux only
(``os.sched_setaffinity``); elsewhere ``serve`` refuses the option in one line.
"""

from __future__ import annotations

import os

TASKS = "/proc/self/task"


def supported() -> bool:
    """Whether this platform can pin a process to a CPU."""
    return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def cpu_for_worker(n: int, cpus: list[int]) -> int:
    """The CPU of worker ``n`` (1…N): the ``n``-th of ``cpus``, counting round."""
    if n < 1 or not cpus:
        raise ValueError("a worker number starts at 1 and needs at least one CPU")
    return cpus[(n - 1) % len(cpus)]


def pin_process(cpu: int) -> None:
    """Pin every thread of this process, and every thread it starts later, to ``cpu``.

    ``sched_setaffinity`` sets one thread's CPUs (new threads inherit their
    creator's): each thread already running is pinned by its id, this one first."""
    os.sched_setaffinity(0, {cpu})
    try:
        threads = [int(tid) for tid in os.listdir(TASKS)]
    except OSError:  # no /proc: only this thread, and the threads it starts, are pinned
        return
    for tid in threads:
        try:
            os.sched_setaffinity(tid, {cpu})
        except ProcessLookupError:  # the thread ended meanwhile
            pass
