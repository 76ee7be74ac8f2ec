"""``relaygate serve --workers N``: one supervisor, N worker processes, each on a
``SO_REUSEPORT`` socket of its own.

SIGTERM to the supervisor drains every worker (streams in flight finish and are
billed, a stream longer than the grace period is cut and billed for what it
delivered, new connections are refused), a worker killed with SIGKILL is
started again while the others keep serving, log lines stay JSON with the
worker's number, and several workers without Redis refuse to start when limits
are configured."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import orjson
import pytest

from gateway_core.testing import GatewayProcess

WORDS = "one two three four five"  # the demo channel streams "Hello from the demo channel. You said: …" a word at a time


@pytest.fixture
def priced_demo(seed):
    """alice with a balance and a key; ``demo-chat`` (100 ms between words, about
    1.3 s a stream) and ``demo-slow`` (1 s between words), both priced."""
    user = seed.user("alice", balance_usd=10)
    _, secret = seed.key(user)
    seed.channel("demo", type="demo", base_url="local://demo", models=["demo-chat"], settings={"delay_ms": 100})
    seed.channel("slow", type="demo", base_url="local://demo", models=["demo-slow"], settings={"delay_ms": 1000})
    seed.price("demo-chat", 1_000_000, 2_000_000)
    seed.price("demo-slow", 1_000_000, 2_000_000)
    return secret


async def start_stream(session: aiohttp.ClientSession, url: str, secret: str, model: str) -> aiohttp.ClientResponse:
    """A streamed chat request whose first chunk has arrived."""
    body = {"model": model, "messages": [{"role": "user", "content": WORDS}], "stream": True}
    response = await session.post(url + "/v1/chat/completions", data=orjson.dumps(body), headers={"Authorization": f"Bearer {secret}"})
    assert response.status == 200
    await response.content.readuntil(b"\n\n")
    return response


async def read_until_cut(response: aiohttp.ClientResponse) -> bytes:
    """What arrived of a body before the server closed the connection."""
    received = b""
    try:
        async for chunk in response.content.iter_any():
            received += chunk
    except aiohttp.ClientPayloadError:
        pass
    return received


def streamed_text(body: bytes) -> str:
    """The text of an OpenAI chat stream."""
    events = [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: {")]
    return "".join(choice["delta"].get("content") or "" for event in events for choice in event["choices"])


async def all_serving(gateway: GatewayProcess, workers: int) -> None:
    """Wait until each worker says it is serving."""
    deadline = time.monotonic() + 30
    while gateway.output().count('"Running on http') < workers:
        assert time.monotonic() < deadline, gateway.output()
        await asyncio.sleep(0.1)


def worker_pids(pid: int) -> set[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return {int(p) for p in f.read().split()}


def json_lines(output: str) -> list[dict]:
    lines = [line for line in output.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is one JSON record


async def test_sigterm_drains_every_worker_and_bills_every_stream(seed, relaygate_config, priced_demo):
    gateway = GatewayProcess(relaygate_config.db_path, workers=2, args=["--grace", "3"]).start()
    try:
        await all_serving(gateway, 2)
        async with aiohttp.ClientSession() as session:
            short = [await start_stream(session, gateway.url, priced_demo, "demo-chat") for _ in range(8)]
            long = await start_stream(session, gateway.url, priced_demo, "demo-slow")  # about 13 s: longer than the grace
            assert gateway.process is not None
            gateway.process.send_signal(signal.SIGTERM)  # to the supervisor only: it tells the workers
            stopped_at = time.monotonic()
            bodies = [await response.read() for response in short]
            cut = await read_until_cut(long)
            status = await asyncio.to_thread(gateway.process.wait, 20)
        assert status == 0 and time.monotonic() - stopped_at < 10
        assert all(body.endswith(b"data: [DONE]\n\n") and streamed_text(body).endswith(f"You said: {WORDS}") for body in bodies)
        assert not cut.endswith(b"data: [DONE]\n\n")
        with pytest.raises(aiohttp.ClientConnectionError):  # every worker closed its socket
            async with aiohttp.ClientSession() as session:
                await session.get(gateway.url + "/healthz")
    finally:
        gateway.kill()
    rows = seed.rows("SELECT request_id, model, status, end_reason, cost_micros FROM usage_logs ORDER BY id")
    finished = [r for r in rows if r["model"] == "demo-chat"]
    assert len(finished) == 8 and all(r["end_reason"] == "done" and r["cost_micros"] > 0 for r in finished)
    [slow] = [r for r in rows if r["model"] == "demo-slow"]
    assert slow["end_reason"] != "done" and slow["cost_micros"] > 0  # cut at the grace period: what it delivered is charged
    for row in rows:
        ledger = seed.rows("SELECT kind, amount_micros FROM ledger WHERE request_id = ?", (row["request_id"],))
        assert ("capture", -row["cost_micros"]) in [(e["kind"], e["amount_micros"]) for e in ledger]
    assert seed.rows("SELECT count(*) AS n FROM holds")[0]["n"] == 0
    records = json_lines(gateway.output())
    served_by = {r["worker"] for r in records if r.get("event") == "request"}
    assert served_by <= {1, 2} and served_by
    assert any(r.get("event") == "worker stopped" and r["worker"] == 0 for r in records)
    assert any("without Redis" in r.get("event", "") for r in records)  # no limits configured: a warning


async def test_a_killed_worker_is_started_again_and_the_server_keeps_serving(seed, relaygate_config, priced_demo):
    gateway = GatewayProcess(relaygate_config.db_path, workers=2).start()
    assert gateway.process is not None
    try:
        await all_serving(gateway, 2)
        before = worker_pids(gateway.process.pid)
        assert len(before) == 2
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        served = 0
        async with aiohttp.ClientSession() as session:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:  # the survivor answers while the victim is replaced
                body = {"model": "demo-chat", "messages": [{"role": "user", "content": "hi"}]}
                async with session.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {priced_demo}"}) as r:
                    assert r.status == 200
                    served += 1
                after = worker_pids(gateway.process.pid)
                if len(after) == 2 and victim not in after:
                    break
        assert len(after) == 2 and victim not in after and served >= 1
        await all_serving(gateway, 3)  # the replacement is up: both serve
        logged = len(json_lines(gateway.output()))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32)) as session:

            async def chat() -> tuple[int, str]:
                body = {"model": "demo-chat", "messages": [{"role": "user", "content": "hi"}]}
                async with session.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {priced_demo}"}) as r:
                    return r.status, r.headers["x-request-id"]

            answers = await asyncio.gather(*(chat() for _ in range(32)))  # 32 connections at once
            assert [status for status, _ in answers] == [200] * 32
        ids = {request_id for _, request_id in answers}
        await asyncio.sleep(0.5)
        # only this batch's records: a request served while the worker was replaced may be logged late
        spread = [r["worker"] for r in json_lines(gateway.output())[logged:] if r.get("event") == "request" and r.get("request_id") in ids]
        assert len(spread) == 32 and spread.count(1) >= 4 and spread.count(2) >= 4  # the kernel spreads them over both sockets
        assert gateway.terminate() == 0
    finally:
        gateway.kill()
    records = json_lines(gateway.output())
    [exited] = [r for r in records if r.get("event") == "worker exited"]  # and was replaced
    assert exited["pid"] == victim and exited["signal"] == "SIGKILL" and exited["worker"] == 0
    assert len([r for r in records if r.get("event") == "worker started"]) == 3


def test_several_workers_without_redis_refuse_configured_limits(seed, relaygate_config, tmp_path):
    user = seed.user("alice")
    seed.key(user, limits={"rpm": 60})
    command = [str(Path(sys.executable).parent / "relaygate"), "serve", "--db", relaygate_config.db_path, "--port", "1", "--workers", "2"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert "--workers 2 without Redis" in line and "1 API key(s)" in line and "add --redis URL" in line


def thread_cpus(pid: int) -> list[frozenset[int]]:
    """The CPUs each thread of process ``pid`` may run on (``Cpus_allowed_list``: ``0-3,6``)."""
    allowed = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            [text] = [line.split(":", 1)[1].strip() for line in f if line.startswith("Cpus_allowed_list:")]
        cpus: set[int] = set()
        for part in text.split(","):
            first, _, last = part.partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
        allowed.append(frozenset(cpus))
    return allowed


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="pinning to a CPU is Linux's")
async def test_pinned_workers_keep_every_thread_on_a_cpu_of_their_own(seed, relaygate_config, priced_demo):
    cpus = sorted(os.sched_getaffinity(0))
    expected = {1: frozenset({cpus[0]}), 2: frozenset({cpus[1 % len(cpus)]})}  # one CPU: both workers on it
    gateway = GatewayProcess(relaygate_config.db_path, workers=2, args=["--pin-workers"]).start()
    assert gateway.process is not None
    try:
        await all_serving(gateway, 2)

        async def sixteen_answered() -> None:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16)) as session:

                async def chat() -> int:
                    body = {"model": "demo-chat", "messages": [{"role": "user", "content": "hi"}]}
                    async with session.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {priced_demo}"}) as r:
                        return r.status

                assert await asyncio.gather(*(chat() for _ in range(16))) == [200] * 16  # the store's threads are running

        def placement() -> dict[int, list[frozenset[int]]]:
            started = {r["pid"]: r["slot"] for r in json_lines(gateway.output()) if r.get("event") == "worker started"}
            return {started[pid]: thread_cpus(pid) for pid in worker_pids(gateway.process.pid)}

        await sixteen_answered()
        pinned = placement()
        assert set(pinned) == {1, 2}
        for slot, allowed in pinned.items():
            assert len(allowed) >= 3 and set(allowed) == {expected[slot]}  # every thread: loop, writer, readers
        assert set(thread_cpus(gateway.process.pid)) == {frozenset(cpus)}  # the supervisor is not pinned
        [serving] = [r for r in json_lines(gateway.output()) if r.get("event") == "serving"]
        assert serving["cpus"] == [cpus[0], cpus[1 % len(cpus)]]

        victim = {r["slot"]: r["pid"] for r in json_lines(gateway.output()) if r.get("event") == "worker started"}[1]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while victim in worker_pids(gateway.process.pid) or len(worker_pids(gateway.process.pid)) < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        await all_serving(gateway, 3)
        await sixteen_answered()
        assert {slot: set(allowed) for slot, allowed in placement().items()} == {1: {expected[1]}, 2: {expected[2]}}  # the replacement: its slot's CPU
        assert gateway.terminate() == 0
    finally:
        gateway.kill()
