"""Three replicas over one PostgreSQL database and one Redis behave as one
gateway: a key's request limit and concurrency limit hold across them, a small
balance is never overdrawn by requests spread over them, and a replica killed in
the middle of load loses no charge of a request it completed."""

from __future__ import annotations

import asyncio
import signal
import time

import orjson

from gateway_core.billing.testing import MODEL, expected_cost
from gateway_core.tally import estimate_tokens
from gateway_openai.fake_upstream import Fault

from .conftest import CHAT, Answer, statuses


async def test_a_key_limited_to_10_a_minute_gets_exactly_10_of_30(cluster):
    world = await cluster()
    _, secret = await world.seed(limits={"rpm": 10})
    answers = await asyncio.gather(*(world.chat(n, secret) for n in range(30)))
    assert statuses(answers) == {200: 10, 429: 20}
    assert len(world.upstream.requests) == 10
    refused = [a for a in answers if a.status == 429]
    assert {a.code for a in refused} == {"rate_limit_exceeded"} and all(int(a.retry_after or 0) >= 1 for a in refused)
    assert {a.replica for a in refused} == {0, 1, 2}  # every replica refused: one count, not three


async def test_a_concurrency_limit_of_3_is_never_exceeded(cluster):
    world = await cluster()
    _, secret = await world.seed(limits={"concurrency": 3})
    world.upstream.fail_next(*[Fault(first_byte_delay=1.0)] * 30)
    passed = 0
    for wave in range(2):  # the slots are given back: the second wave gets three again
        answers = await asyncio.gather(*(world.chat(n, secret, stream=n % 2 == 0) for n in range(wave * 12, wave * 12 + 12)))
        assert statuses(answers) == {200: 3, 429: 9}
        assert all(a.complete for a in answers if a.status == 200)
        passed += 3
    assert world.upstream.most_in_flight == 3  # counted where the requests land, across the replicas
    assert len(world.upstream.requests) == passed


async def test_300_concurrent_priced_requests_never_overdraw_a_balance_covering_40(cluster):
    world = await cluster()
    body_size = len(orjson.dumps({"model": MODEL, "messages": CHAT, "max_tokens": 20, "stream": True, "stream_options": {"include_usage": True}}))
    reservation = expected_cost(estimate_tokens(body_size), 20)  # the largest hold of one request
    user_id, secret = await world.seed(balance_micros=reservation * 40)
    world.upstream.fail_next(*[Fault(first_byte_delay=0.3)] * 300)  # answers take a while: holds overlap
    answers = await asyncio.gather(*(world.chat(n, secret, stream=n % 4 == 0) for n in range(300)))
    admitted = [a for a in answers if a.status == 200]
    refused = [a for a in answers if a.status != 200]
    assert len(admitted) >= 40 and all(a.complete for a in admitted)
    assert refused and {(a.status, a.code) for a in refused} == {(429, "insufficient_quota")}
    rows = await world.rows("SELECT status, cost_micros FROM usage_logs WHERE user_id = ?", user_id)
    assert len(rows) == 300
    charged = sum(row["cost_micros"] for row in rows)
    assert charged > 0 and await world.value("SELECT balance_micros FROM users WHERE id = ?", user_id) == reservation * 40 - charged
    assert await world.value("SELECT min(balance_after_micros) FROM ledger WHERE user_id = ?", user_id) >= 0
    assert await world.value("SELECT count(*) FROM holds") == 0
    report = await world.check()
    assert (report["exit_status"], report["ok"], report["problems"], report["open_holds"]) == (0, True, [], 0)


async def test_a_replica_killed_mid_load_loses_no_completed_charge(cluster):
    world = await cluster(stale_hold_seconds=4)  # the survivors' sweepers look every second
    world.upstream.chunk_delay = 0.1  # a stream takes about a second
    user_id, secret = await world.seed()
    victim = world.replicas[1]

    victim_done = asyncio.Event()
    done_by_victim = 0

    async def staggered(n: int) -> Answer:
        nonlocal done_by_victim
        await asyncio.sleep(n * 0.015)
        answer = await world.chat(n, secret, stream=True)
        if answer.replica == 1 and answer.complete:
            done_by_victim += 1
            if done_by_victim == 2:
                victim_done.set()
        return answer

    load = asyncio.gather(*(staggered(n) for n in range(120)))
    await asyncio.wait_for(victim_done.wait(), 30)  # it completed some; streams are under way everywhere
    assert victim.process is not None
    victim.process.send_signal(signal.SIGKILL)
    answers = await load
    completed = [a for a in answers if a.status == 200 and a.complete]
    assert {a.replica for a in completed} == {0, 1, 2}  # the victim completed some before it died
    assert [a for a in answers if a.replica != 1] == [a for a in completed if a.replica != 1]  # the others served all
    assert any(a.replica == 1 and not a.complete for a in answers)  # and it died with some in flight
    for answer in completed:  # every answer a client got whole was charged
        row = (await world.rows("SELECT status, cost_micros FROM usage_logs WHERE request_id = ?", answer.request_id))[0]
        captured = await world.value("SELECT sum(amount_micros) FROM ledger WHERE request_id = ? AND kind = 'capture'", answer.request_id)
        assert row["status"] == 200 and row["cost_micros"] > 0 and captured == -row["cost_micros"]
    # the victim died with requests in flight, each holding a reservation; a survivor's
    # sweeper releases them (at once when it sees the victim's process gone on this
    # host, else when their lease runs out)
    deadline = time.monotonic() + 20
    while await world.value("SELECT count(*) FROM holds") and time.monotonic() < deadline:
        await asyncio.sleep(0.25)
    assert await world.value("SELECT count(*) FROM holds") == 0
    report = await world.check()
    assert (report["exit_status"], report["ok"], report["problems"]) == (0, True, [])
    charged = await world.value("SELECT sum(cost_micros) FROM usage_logs WHERE user_id = ?", user_id)
    assert await world.value("SELECT balance_micros FROM users WHERE id = ?", user_id) == 10_000_000 - charged
