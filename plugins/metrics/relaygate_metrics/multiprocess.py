"""Metrics of several worker processes, added up: prometheus-client's multiprocess mode.

Each worker writes its values to memory-mapped files in one folder
(``PROMETHEUS_MULTIPROC_DIR``); whichever worker answers ``GET /metrics`` reads
them all, so the numbers are the server's, not one worker's. The parent process
calls :func:`prepare_workers` before it starts any worker; each worker finds the
folder in its environment.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile

ENV = "PROMETHEUS_MULTIPROC_DIR"
_LIVE_GAUGE = re.compile(r"^gauge_live\w+?_(\d+)\.db$")


def prepare_workers(workers: int) -> str | None:
    """Set up the metrics of ``workers`` worker processes; the folder they share,
    or ``None`` for one process (its metrics stay in its memory).

    Call it in the parent before any worker starts (and before the parent
    creates metrics of its own). The operator's ``PROMETHEUS_MULTIPROC_DIR`` is
    used when set (emptied of a previous run's files), else a private temporary
    folder removed when the parent exits."""
    folder = os.environ.get(ENV)
    if workers <= 1 and not folder:
        return None
    if folder:
        os.makedirs(folder, exist_ok=True)
        for name in os.listdir(folder):
            if name.endswith(".db"):
                os.unlink(os.path.join(folder, name))
    else:
        folder = tempfile.mkdtemp(prefix="relaygate-metrics-")
        atexit.register(_remove, folder, os.getpid())
        os.environ[ENV] = folder
    _reload_value_class()
    return folder


def shared_folder() -> str | None:
    """The folder of the multiprocess mode this process is in, or ``None``."""
    return os.environ.get(ENV) or None


def forget_dead_workers(folder: str) -> None:
    """Drop the gauges of worker processes that are gone (killed, or replaced),
    so in-flight counts and breaker states are those of the living ones."""
    from prometheus_client import multiprocess

    pids = set()
    for name in os.listdir(folder):
        match = _LIVE_GAUGE.match(name)
        if match:
            pids.add(int(match.group(1)))
    for pid in pids:
        if not _alive(pid):
            multiprocess.mark_process_dead(pid, folder)


def leave(folder: str) -> None:
    """This worker is stopping: its live gauges stop counting."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(os.getpid(), folder)


def _remove(folder: str, parent: int) -> None:
    if os.getpid() == parent:  # not in a forked worker
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reload_value_class() -> None:
    """prometheus-client picks how values are kept when first imported: if this
    process imported it before the folder was set, pick again."""
    import sys

    values = sys.modules.get("prometheus_client.values")
    if values is not None:
        values.ValueClass = values.get_value_class()  # type: ignore[attr-defined]
