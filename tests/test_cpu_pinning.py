"""Pinning a gateway process to one CPU (``serve --pin-workers``): the CPU each
worker gets, every thread of a process pinned (those already running too), and
one worker served pinned. Several workers: ``tests/replicas/test_workers.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import openai
import pytest

from gateway_core.commands.cli import main
from gateway_core.config import ConfigError, load_config
from gateway_core.runtime.cpu_pinning import cpu_for_worker
from gateway_core.testing import GatewayProcess

linux_only = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning to a CPU is Linux's")


def test_each_worker_gets_the_next_allowed_cpu_counting_round():
    assert [cpu_for_worker(n, [0, 1]) for n in (1, 2, 3, 4)] == [0, 1, 0, 1]
    assert [cpu_for_worker(n, [2, 5, 7]) for n in (1, 2, 3)] == [2, 5, 7]  # the allowed ones, not 0…N
    assert [cpu_for_worker(n, [3]) for n in (1, 2)] == [3, 3]
    with pytest.raises(ValueError):
        cpu_for_worker(0, [0, 1])
    with pytest.raises(ValueError):
        cpu_for_worker(1, [])


def test_pin_workers_is_a_gateway_setting(tmp_path):
    plugins = tmp_path / "plugins.toml"
    plugins.write_text("[gateway]\npin_workers = true\n")
    assert load_config(str(tmp_path / "db"), str(plugins)).pin_workers is True
    assert load_config(str(tmp_path / "db"), None).pin_workers is False
    plugins.write_text('[gateway]\npin_workers = "yes please"\n')
    with pytest.raises(ConfigError):
        load_config(str(tmp_path / "db"), str(plugins))


PIN_A_BUSY_PROCESS = """
import os, sys, threading, time
from gateway_core.runtime.cpu_pinning import pin_process
stop = threading.Event()
early = threading.Thread(target=stop.wait)  # running before the pin
early.start()
cpu = int(sys.argv[1])
pin_process(cpu)
late = threading.Thread(target=stop.wait)  # started after it
late.start()
print(sorted({frozenset(os.sched_getaffinity(int(tid))) == {cpu} for tid in os.listdir("/proc/self/task")}), len(os.listdir("/proc/self/task")))
stop.set()
"""


@linux_only
def test_every_thread_is_pinned_those_already_running_too():
    cpu = max(os.sched_getaffinity(0))
    done = subprocess.run([sys.executable, "-c", PIN_A_BUSY_PROCESS, str(cpu)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[True]", "3"]  # the main thread, the early one, the late one


def process_cpus(pid: int) -> set[frozenset[int]]:
    return {frozenset(os.sched_getaffinity(int(tid))) for tid in os.listdir(f"/proc/{pid}/task")}


@linux_only
def test_one_worker_serves_pinned(seed, relaygate_config, demo_key):
    cpu = min(os.sched_getaffinity(0))
    with GatewayProcess(relaygate_config.db_path, args=["--pin-workers"]) as gateway:
        client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=demo_key, max_retries=0)
        answer = client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content
        assert gateway.process is not None
        assert process_cpus(gateway.process.pid) == {frozenset({cpu})}  # the loop, the store's writer and readers
        gateway.terminate()
    [serving] = [r for r in map(json.loads, gateway.output().splitlines()) if r.get("event") == "serving"]
    assert serving["cpus"] == [cpu]
    rows = seed.rows("SELECT status FROM usage_logs")
    assert [r["status"] for r in rows] == [200]


@linux_only
@pytest.mark.skipif(len(getattr(os, "sched_getaffinity", lambda _: ())(0)) < 2, reason="needs two CPUs to tell pinned from not")
def test_the_setting_pins_and_no_pin_workers_overrides_it(seed, relaygate_config, demo_key, tmp_path):
    plugins = tmp_path / "plugins.toml"
    plugins.write_text("[gateway]\npin_workers = true\n")
    everywhere = frozenset(os.sched_getaffinity(0))
    for args, expected in (((), {frozenset({min(everywhere)})}), (("--no-pin-workers",), {everywhere})):
        with GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins), args=args) as gateway:
            client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=demo_key, max_retries=0)
            assert client.chat.completions.create(model="demo-chat", messages=[{"role": "user", "content": "hi"}]).choices
            assert gateway.process is not None
            assert process_cpus(gateway.process.pid) == expected, args
            gateway.terminate()


def test_a_platform_that_cannot_pin_refuses_in_one_line(seed, relaygate_config, monkeypatch, capsys):
    monkeypatch.setattr("gateway_core.runtime.cpu_pinning.supported", lambda: False)
    assert main(["--db", relaygate_config.db_path, "serve", "--port", "0", "--pin-workers"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--pin-workers needs a platform that can pin a process to a CPU" in err[0]
