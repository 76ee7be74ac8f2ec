"""The load generator: aiohttp, keep-alive, one session per phase with a
connector limited to the concurrency, every answer checked."""

from __future__ import annotations

import asyncio
import collections
import math
import re
import time
from collections.abc import Sequence
from typing import Any

import aiohttp
import orjson

from wires import MODEL, OPENAI, Wire

REQUEST_ID = re.compile(r"req_[0-9a-f]+")



def request_body(stream: bool) -> bytes:
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Say hello to the benchmark."},
        ],
        "max_tokens": 64,
        "temperature": 0,
    }
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return orjson.dumps(body)



class Target:
    """Where one arm's requests go, in which client protocol (``wire``), for which model."""

    def __init__(self, name: str, base_url: str, api_key: str, extra_headers: dict[str, str] | None = None,
                 wire: Wire = OPENAI, model: str = MODEL) -> None:  # fmt: skip
        self.name = name
        self.wire = wire
        self.url = base_url + wire.path(model, False)
        self.stream_url = base_url + wire.path(model, True)
        self.sent = 0  # every request, warm-up included
        self.headers = {**wire.key_headers(api_key), "Content-Type": "application/json", **(extra_headers or {})}



class Recorder:
    """Latencies (ns) and errors of one target in one phase."""

    def __init__(self) -> None:
        self.latencies: list[int] = []
        self.first_bytes: list[int] = []
        self.errors: collections.Counter[str] = collections.Counter()

    @property
    def requests(self) -> int:
        return len(self.latencies) + sum(self.errors.values())



async def one_request(session: aiohttp.ClientSession, target: Target, body: bytes, stream: bool, rec: Recorder | None) -> int | None:
    """Send one request and check its answer; return its latency in ns (``None`` on error)."""
    error = None
    first = None
    target.sent += 1
    started = time.perf_counter_ns()
    try:
        async with session.post(target.stream_url if stream else target.url, data=body, headers=target.headers) as response:
            if response.status != 200:
                data = await response.read()
                error = f"HTTP {response.status}: {data[:160].decode('utf-8', 'replace')}"
            elif stream:
                tail = b""
                async for chunk in response.content.iter_any():
                    if first is None:
                        first = time.perf_counter_ns()
                    tail = (tail + chunk)[-800:]
                error = target.wire.check(tail, True)
            else:
                error = target.wire.check(await response.read(), False)
    except Exception as exc:  # counted, shown, and the run goes on
        error = f"{type(exc).__name__}: {exc}"[:200]
    ended = time.perf_counter_ns()
    if rec is None:
        return None if error else ended - started
    if error:
        rec.errors[REQUEST_ID.sub("req_…", error)] += 1
        return None
    rec.latencies.append(ended - started)
    if first is not None:
        rec.first_bytes.append(first - started)
    return ended - started



def new_session(concurrency: int) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency, keepalive_timeout=120)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60))



class Budget:
    """When a phase ends: after ``duration`` seconds, or after ``requests`` requests."""

    def __init__(self, duration: float, requests: int | None) -> None:
        self.deadline = time.perf_counter() + duration if requests is None else float("inf")
        self.left = requests

    def take(self) -> bool:
        if self.left is not None:
            if self.left <= 0:
                return False
            self.left -= 1
            return True
        return time.perf_counter() < self.deadline



async def closed_loop(session, target: Target, body: bytes, stream: bool, concurrency: int, budget: Budget, rec: Recorder | None) -> None:
    async def worker() -> None:
        while budget.take():
            await one_request(session, target, body, stream, rec)

    await asyncio.gather(*(worker() for _ in range(concurrency)))



def stats(rec: Recorder, elapsed: float) -> dict[str, Any]:
    lat = sorted(rec.latencies)
    out: dict[str, Any] = {
        "requests": rec.requests,
        "ok": len(lat),
        "errors": sum(rec.errors.values()),
        "error_kinds": dict(rec.errors.most_common(5)),
        "elapsed_s": round(elapsed, 3),
        "rps": round(len(lat) / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": ms(percentile(lat, 0.50)),
        "p90_ms": ms(percentile(lat, 0.90)),
        "p99_ms": ms(percentile(lat, 0.99)),
        "mean_ms": ms(sum(lat) / len(lat)) if lat else None,
    }
    if rec.first_bytes:
        fb = sorted(rec.first_bytes)
        out["first_byte_p50_ms"] = ms(percentile(fb, 0.50))
        out["first_byte_p99_ms"] = ms(percentile(fb, 0.99))
    return out



def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of sorted ``values``."""
    if not values:
        return None
    rank = max(1, math.ceil(q * len(values)))
    return values[min(len(values), rank) - 1]



def ms(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 3)

