"""The supervisor of ``serve --workers N``, in a process of its own, with small
real programs standing in for workers: a crash loop ends the server with status
3, a worker that ignores SIGTERM is killed after the grace period (status 4),
a worker that stops on SIGTERM gives status 0, and every line of the log is JSON
(what a worker prints that is not JSON becomes a ``worker output`` record)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from gateway_core.runtime.supervisor import EXIT_CRASH_LOOP, EXIT_KILLED, EXIT_OK

DRIVER = """
import os, sys
from gateway_core.runtime.logs import configure_logging
from gateway_core.runtime.supervisor import RestartPolicy, Supervisor
configure_logging(json=True, worker=0)
from gateway_core.runtime.server import listening_socket
port = listening_socket("127.0.0.1", 0).getsockname()[1]
worker = sys.argv[1]
policy = RestartPolicy(first_delay=0.01, max_delay=0.05, crash_limit=3, window=60)
supervisor = Supervisor(
    lambda: listening_socket("127.0.0.1", port), workers=int(sys.argv[2]), grace=float(sys.argv[3]), env=dict(os.environ), json=True,
    policy=policy, command=lambda n, fd: [sys.executable, "-c", worker], stop_margin=0.3,
)
status = supervisor.run()
print('{"event": "result", "started": %d, "closed": %s}' % (supervisor.started, str(not supervisor.sockets).lower()), flush=True)
sys.exit(status)
"""


def supervise(worker: str, *, workers: int, grace: float, stop_when_up: bool = False) -> tuple[int, list[dict]]:
    """Run the driver; with ``stop_when_up``, send it SIGTERM once every worker has
    said it is up (its signal handlers are set before any worker starts)."""
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER, worker, str(workers), str(grace)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    head: list[bytes] = []
    if stop_when_up:
        assert process.stdout is not None
        deadline = time.monotonic() + 30
        while sum(b'"event": "up"' in line for line in head) < workers:
            assert time.monotonic() < deadline, head
            line = process.stdout.readline()
            assert line, head  # the driver ended before its workers were up
            head.append(line)
        process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    return process.returncode, [json.loads(line) for line in (b"".join(head) + out).decode().splitlines() if line.strip()]


def test_workers_that_keep_crashing_stop_the_server_with_status_3():
    crashing = "import sys; print('Traceback (most recent call last): boom', file=sys.stderr); sys.exit(2)"
    status, lines = supervise(crashing, workers=2, grace=1)  # every line parsed as JSON
    assert status == EXIT_CRASH_LOOP
    assert lines[-1]["started"] in (4, 5)  # the fourth exit within the window is one too many (crash_limit 3)
    stray = [r for r in lines if r["event"] == "worker output"]
    assert {r["line"] for r in stray} == {"Traceback (most recent call last): boom"} and {r["worker"] for r in stray} <= {1, 2}
    exits = [r for r in lines if r["event"] == "worker exited"]
    assert len(exits) == 4 and {r["status"] for r in exits} == {2} and {r["worker"] for r in exits} == {0}
    assert any(r["event"] == "workers keep crashing: stopping the server" for r in lines)


def test_a_worker_that_overruns_its_shutdown_is_killed_with_status_4():
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('{\"event\": \"up\"}', flush=True); time.sleep(60)"
    status, lines = supervise(stubborn, workers=1, grace=0.2, stop_when_up=True)
    assert status == EXIT_KILLED
    assert {"event": "up"} in lines  # a worker's JSON line passes as it is
    assert any(r["event"] == "worker overran its shutdown: killed" for r in lines)
    assert lines[-1]["closed"] is True  # the supervisor closed its copies of the sockets


def test_workers_that_stop_on_sigterm_end_with_status_0():
    polite = "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); print('{\"event\": \"up\"}', flush=True); time.sleep(60)"
    status, lines = supervise(polite, workers=2, grace=5, stop_when_up=True)
    assert status == EXIT_OK
    stopped = [r for r in lines if r["event"] == "worker stopped"]
    assert sorted(r["slot"] for r in stopped) == [1, 2] and {r["status"] for r in stopped} == {0}
    assert lines[-1]["started"] == 2


def test_a_burst_of_output_from_every_worker_passes_whole_and_in_order():
    """The relay reads a few milliseconds' worth at a time: lines of any length
    (some beyond a pipe's atomic 4 KiB), many at once, from two workers together,
    come out whole, each worker's in its order, none lost; a last line without its
    newline still comes."""
    chatty = (
        "import json, os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (sys.stdout.write('{\"event\": \"tail\"}'), sys.stdout.flush(), sys.exit(0)))\n"
        "worker = os.getpid()\n"
        "for n in range(3000):\n"
        "    sys.stdout.write(json.dumps({'event': 'line', 'pid': worker, 'n': n, 'pad': 'x' * (9000 if n % 500 == 0 else n % 97)}) + '\\n')\n"
        "sys.stdout.flush()\n"
        "print('{\"event\": \"up\"}', flush=True)\n"
        "time.sleep(60)\n"
    )
    status, lines = supervise(chatty, workers=2, grace=5, stop_when_up=True)  # every line parsed as JSON
    assert status == EXIT_OK
    by_worker: dict[int, list[int]] = {}
    for record in lines:
        if record["event"] == "line":
            by_worker.setdefault(record["pid"], []).append(record["n"])
    assert list(by_worker.values()) == [list(range(3000))] * 2
    assert sum(r["event"] == "tail" for r in lines) == 2
