"""Profilers attached to the gateway for one phase: py-spy (Python frames) and perf (C and kernel)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from processes import Placement


class PySpy:
    """``py-spy record`` on a pid for the duration of one phase (raw collapsed stacks)."""

    def __init__(self, pid: int, out: Path, rate: int, core: int | None, subprocesses: bool, placement: Placement, native: bool = False) -> None:
        exe = Path(sys.executable).parent / "py-spy"
        if not exe.exists():
            exe = shutil.which("py-spy")
            if not exe:
                raise SystemExit("bench: --profile needs py-spy (.venv/bin/pip install py-spy)")
        self.argv = placement.command(core, [
            str(exe), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
            "--threads", "--output", str(out),
        ] + (["--subprocesses"] if subprocesses else []) + (["--native"] if native else ["--nonblocking"]))  # fmt: skip
        self.out = out
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(0.3)  # let it attach before the phase starts

    def stop(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        _, err = self.process.communicate(timeout=60)
        if not self.out.exists():
            raise SystemExit(f"bench: py-spy wrote no profile: {err.decode(errors='replace')[-500:]}")



class Perf:
    """``perf record`` (on-CPU samples, kernel included) on a pid for one phase."""

    def __init__(self, pid: int, out: Path, core: int | None, placement: Placement) -> None:
        exe = shutil.which("perf")
        if not exe:
            raise SystemExit("bench: --perf needs the perf tool (linux-perf)")
        self.argv = placement.command(core, [exe, "record", "-F", "997", "-g", "-p", str(pid), "-o", str(out)])
        self.out = out
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(0.3)

    def stop(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=60)
        if not self.out.exists():
            raise SystemExit(f"bench: perf wrote no profile: {err.decode(errors='replace')[-500:]}")



class Both:
    """Several recorders started and stopped together."""

    def __init__(self, *recorders) -> None:
        self.recorders = [r for r in recorders if r is not None]

    def start(self) -> None:
        for r in self.recorders:
            r.start()

    def stop(self) -> None:
        for r in reversed(self.recorders):
            r.stop()

