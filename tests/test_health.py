"""Circuit breakers, leases and the attempt plan, with a fake clock (no network)."""

from __future__ import annotations

import time

import pytest

from gateway_core.channel_type import Timeouts
from gateway_core.errors import InvalidRequestError, RateLimitError, UpstreamError, UpstreamTimeoutError
from gateway_core.routing.failover import NO_CHANNEL, RATE_LIMITED, AttemptPlan
from gateway_core.routing.health import CLOSED, HALF_OPEN, OPEN, Breaker, HealthBoard, Lease, classify
from gateway_core.secrets import redact
from gateway_core.records import ChannelRecord, DisabledKey, key_fingerprint, mask_secret
from gateway_core.routing.router import route_for


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def channel(id: int = 1, name: str = "c1", keys=("sk-key-aaaaaaaa1",), **fields) -> ChannelRecord:
    return ChannelRecord(id=id, name=name, type="openai", base_url="http://x", api_keys=tuple(keys), models=("m",),
                         model_map={}, groups=("default",), **fields)  # fmt: skip


def upstream_error(status: int | None, **kwargs) -> UpstreamError:
    error = UpstreamError(f"failed {status}", retryable=True, **kwargs)
    error.upstream_status = status
    return error


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def writes():
    return []


class RecordedWrites:
    """The two writes of the store port the board makes, kept in order."""

    def __init__(self, writes: list) -> None:
        self.writes = writes

    def report_breaker(self, report) -> None:
        self.writes.append(("report_breaker", (report,)))

    def disable_channel_key(self, *args) -> None:
        self.writes.append(("disable_channel_key", args))


@pytest.fixture
def board(clock, writes):
    return HealthBoard(failures=2, cooldown=5.0, clock=clock, store=RecordedWrites(writes))


def take(board: HealthBoard, route, tried=None) -> Lease:
    lease = board.lease(route, tried)
    assert isinstance(lease, Lease), lease
    return lease


# --- the breaker --------------------------------------------------------------------------


def test_breaker_opens_after_consecutive_failures_then_lets_one_probe_through():
    breaker = Breaker()
    assert breaker.ready(0) and not breaker.take()
    assert not breaker.fail(0, 3, 10, "one") and not breaker.fail(0, 3, 10, "two")
    breaker.succeed()  # a success in between resets the count
    assert breaker.failures == 0
    assert not breaker.fail(1, 3, 10, "a") and not breaker.fail(1, 3, 10, "b")
    assert breaker.fail(1, 3, 10, "c") and breaker.state == OPEN and breaker.last_error == "c"
    assert not breaker.ready(10.9)
    assert breaker.ready(11) and breaker.take() is True and breaker.state == HALF_OPEN
    assert not breaker.ready(11.5)  # one probe at a time
    assert breaker.fail(12, 3, 10, "probe failed") and breaker.state == OPEN and breaker.until == 22
    assert breaker.ready(22) and breaker.take()
    assert breaker.succeed() and breaker.state == CLOSED and breaker.ready(22)


def test_classify_says_whose_failure_it_is():
    refused = upstream_error(401)
    refused.key_refused = True
    limited = RateLimitError("slow", retryable=True)
    limited.upstream_status = 429
    assert classify(refused) == 2  # KEY_REFUSED
    assert classify(limited) == 1  # KEY_LIMITED
    assert classify(InvalidRequestError("bad")) == 3  # ALIVE: the request's fault
    assert classify(upstream_error(404)) == 4  # NEUTRAL: about this model or path
    for error in (upstream_error(500), upstream_error(None), UpstreamTimeoutError("slow", retryable=True), upstream_error(200)):
        assert classify(error) == 0  # the channel's fault


# --- the board ---------------------------------------------------------------------------


def test_channel_failures_open_the_breaker_and_a_probe_closes_it(board, clock, writes):
    route = route_for(channel(), Timeouts())
    for _ in range(2):
        lease = take(board, route)
        assert board.failed(lease, upstream_error(500)) is False  # the channel's fault: move on
        lease.release()
    assert board.lease(route, None) == "cooling down"
    assert writes[-1][0] == "report_breaker" and writes[-1][1][0].state == "open"
    assert writes[-1][1][0].last_error == "failed 500"
    clock.now += 5
    probe = take(board, route)
    assert probe.channel_probe and board.lease(route, None) == "probing"
    board.succeeded(probe)
    probe.release()
    assert board.health(1).breaker.state == CLOSED
    assert writes[-1][1][0].state == "closed"
    assert take(board, route).channel_probe is False


def test_a_probe_that_ends_without_an_outcome_lets_the_next_request_probe(board, clock):
    route = route_for(channel(), Timeouts())
    for _ in range(2):
        board.failed(take(board, route), upstream_error(502))
    clock.now += 6
    probe = take(board, route)
    probe.release()  # the client went away
    assert take(board, route).channel_probe


def test_keys_rotate_round_robin_and_a_429_cools_only_that_key(board, clock):
    route = route_for(channel(keys=("sk-key-aaaaaaaa1", "sk-key-bbbbbbbb2", "sk-key-cccccccc3")), Timeouts())
    picked = []
    for _ in range(6):
        lease = take(board, route)
        picked.append(lease.key_index)
        board.succeeded(lease)
        lease.release()
    assert picked == [0, 1, 2, 0, 1, 2]
    lease = take(board, route)
    limited = RateLimitError("slow down", retry_after=30, retryable=True)
    limited.upstream_status = 429
    assert board.failed(lease, limited) is True  # the key's fault: another key of the channel may do
    lease.release()
    indexes = set()
    for _ in range(4):
        lease = take(board, route)
        indexes.add(lease.key_index)
        lease.release()
    assert indexes == {1, 2}  # key 0 cools down for its Retry-After
    clock.now += 31
    assert 0 in {take(board, route).key_index for _ in range(3)}


def test_a_request_never_takes_the_same_key_twice(board):
    route = route_for(channel(keys=("sk-key-aaaaaaaa1", "sk-key-bbbbbbbb2")), Timeouts())
    first = take(board, route)
    tried = {(1, first.api_key)}
    second = take(board, route, tried)
    assert second.api_key != first.api_key
    tried.add((1, second.api_key))
    assert board.lease(route, tried) == "no usable upstream key"


def test_a_refused_key_is_disabled_and_persisted(board, writes):
    route = route_for(channel(keys=("sk-key-aaaaaaaa1", "sk-key-bbbbbbbb2")), Timeouts())
    lease = take(board, route)
    refused = upstream_error(401)
    refused.message = f"Incorrect API key provided: {lease.api_key}"
    refused.key_refused = True
    assert board.failed(lease, refused) is True
    lease.release()
    name, (channel_id, fingerprint, index, reason) = writes[-1]
    assert (name, channel_id, fingerprint, index) == ("disable_channel_key", 1, key_fingerprint(lease.api_key), lease.key_index)
    assert "401" in reason and lease.api_key not in reason and mask_secret(lease.api_key) in reason
    assert all(take(board, route).api_key != lease.api_key for _ in range(4))


def test_the_concurrency_cap_makes_a_channel_unavailable_until_a_slot_frees(board):
    route = route_for(channel(concurrency=2), Timeouts())
    first, second = take(board, route), take(board, route)
    assert board.lease(route, None) == "at its concurrency cap"
    first.release()
    first.release()  # idempotent
    third = take(board, route)
    assert board.health(1).in_flight == 2
    second.release(), third.release()
    assert board.in_flight() == {}


def test_routes_leave_out_disabled_keys_and_carry_the_channels_timeouts():
    keys = ("sk-key-aaaaaaaa1", "sk-key-bbbbbbbb2")
    disabled = (DisabledKey(index=0, fingerprint=key_fingerprint(keys[0]), reason="401", at=1.0),)
    route = route_for(channel(keys=keys, disabled_keys=disabled, timeout_first_byte=2.5), Timeouts(connect=3, first_byte=60, idle=30))
    assert route.keys == ((1, keys[1]),)
    assert route.timeouts == Timeouts(connect=3, first_byte=2.5, idle=30)
    assert route_for(channel(keys=()), Timeouts()).keys == ((0, ""),)  # a local channel: no key


def test_redact_masks_an_echoed_key():
    assert redact("bad key sk-secret-123456789", "sk-secret-123456789") == "bad key sk-s…6789"
    assert redact("nothing here", "") == "nothing here"


# --- the attempt plan --------------------------------------------------------------------


def test_the_plan_skips_unavailable_channels_and_stops_at_max_attempts(board, clock):
    routes = [route_for(channel(id=n, name=f"c{n}"), Timeouts()) for n in (1, 2, 3, 4)]
    for _ in range(2):
        board.failed(take(board, routes[0]), upstream_error(500))  # c1 opens
    plan = AttemptPlan(board, routes, "m", max_attempts=2, deadline=time.perf_counter() + 60)
    first = plan.next()
    assert first.route.channel.name == "c2"
    plan.failed(first, upstream_error(503))
    second = plan.next()
    assert second.route.channel.name == "c3"
    plan.failed(second, upstream_error(500))
    assert plan.next() is None  # two attempts made
    error = plan.final_error()
    assert error.upstream_status == 500 and error.message.endswith("(after 2 attempts)")


def test_no_channel_left_is_a_503_naming_the_model_with_retry_after(board, clock):
    routes = [route_for(channel(concurrency=1), Timeouts())]
    for _ in range(2):
        lease = take(board, routes[0])
        board.failed(lease, upstream_error(500))
        lease.release()
    busy = board.lease(routes[0], None, last_resort=True)  # another request's last resort holds the only slot
    assert isinstance(busy, Lease)
    plan = AttemptPlan(board, routes, "gpt-x", max_attempts=3, deadline=time.perf_counter() + 60)
    assert plan.next() is None
    error = plan.final_error()
    assert (error.status, error.code) == (503, NO_CHANNEL)
    assert "'gpt-x'" in error.message and "'c1' cooling down" in error.message
    assert error.retry_after == pytest.approx(5.0)


def test_a_key_fault_retries_the_same_channel_with_another_key(board):
    routes = [route_for(channel(id=1, keys=("sk-key-aaaaaaaa1", "sk-key-bbbbbbbb2")), Timeouts()), route_for(channel(id=2, name="c2"), Timeouts())]
    plan = AttemptPlan(board, routes, "m", max_attempts=5, deadline=time.perf_counter() + 60)
    first = plan.next()
    limited = RateLimitError("slow", retryable=True)
    limited.upstream_status = 429
    plan.failed(first, limited)
    second = plan.next()
    assert second.route.channel.id == 1 and second.api_key != first.api_key
    plan.failed(second, limited)
    third = plan.next()
    assert third.route.channel.id == 2


def test_the_first_byte_timeout_is_cut_to_the_deadline(board):
    routes = [route_for(channel(), Timeouts(first_byte=100))]
    plan = AttemptPlan(board, routes, "m", max_attempts=3, deadline=time.perf_counter() + 2)
    lease = plan.next()
    assert 1.5 < plan.timeouts(lease).first_byte <= 2
    plan.deadline = time.perf_counter() + 500
    assert plan.timeouts(lease).first_byte == 100


# --- configuration ---------------------------------------------------------------------------


def test_gateway_settings_for_failover_and_health():
    from gateway_core.config import ConfigError, config_from_mapping

    config = config_from_mapping({"gateway": {"attempt_deadline": 60, "keepalive_interval": 15, "breaker_failures": 5, "breaker_cooldown": 2.5}})
    assert (config.attempt_deadline, config.keepalive_interval, config.breaker_failures, config.breaker_cooldown) == (60.0, 15.0, 5, 2.5)
    defaults = config_from_mapping({})
    assert (defaults.attempt_deadline, defaults.keepalive_interval, defaults.breaker_failures, defaults.breaker_cooldown) == (300.0, 0.0, 3, 30.0)
    for bad in ({"attempt_deadline": 0}, {"keepalive_interval": -1}, {"breaker_failures": 0}, {"breaker_cooldown": "soon"}, {"max_attempts": 0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            config_from_mapping({"gateway": bad})


# --- the last resort, rate-limited keys and broken streams ---------------------------------------


def open_channel(board: HealthBoard, route) -> None:
    for _ in range(2):
        lease = take(board, route)
        board.failed(lease, upstream_error(500))
        lease.release()


def test_when_every_channel_cools_down_the_one_that_failed_longest_ago_is_tried_last(board, clock):
    routes = [route_for(channel(id=n, name=f"c{n}"), Timeouts()) for n in (1, 2, 3)]
    for n, route in zip((2, 1, 3), [routes[1], routes[0], routes[2]]):
        open_channel(board, route)  # c2 first, then c1, then c3
        clock.now += 1
    plan = AttemptPlan(board, routes, "m", max_attempts=3, deadline=time.perf_counter() + 60)
    resort = plan.next()
    assert resort is not None and resort.route.channel.name == "c2"
    assert resort.channel_probe is False
    plan.failed(resort, upstream_error(500))  # it fails again: open for a new cool-down from now
    breaker = board.health(2).breaker
    assert breaker.state == OPEN and breaker.until == clock.now + 5.0
    assert plan.next() is None  # one last resort per request
    assert plan.final_error().upstream_status == 500
    plan = AttemptPlan(board, routes, "m", max_attempts=3, deadline=time.perf_counter() + 60)
    resort = plan.next()
    assert resort.route.channel.name == "c1"  # now the one that failed longest ago
    board.succeeded(resort)
    resort.release()
    assert board.health(1).breaker.state == CLOSED
    assert take(board, routes[0]).route.channel.name == "c1"  # back in rotation


def test_the_last_resort_comes_after_the_routes_that_are_up(board, clock):
    routes = [route_for(channel(id=1, name="c1"), Timeouts()), route_for(channel(id=2, name="c2"), Timeouts())]
    open_channel(board, routes[0])
    clock.now += 1  # the last resort waits a second after a breaker opens
    plan = AttemptPlan(board, routes, "m", max_attempts=3, deadline=time.perf_counter() + 60)
    first = plan.next()
    assert first.route.channel.name == "c2"
    plan.failed(first, upstream_error(502))
    resort = plan.next()
    assert resort.route.channel.name == "c1"  # c2 failed in this request: c1 is tried before giving up
    plan.failed(resort, upstream_error(502))
    assert plan.next() is None and plan.attempts == 2
    clock.now += 0.5
    again = AttemptPlan(board, [routes[0]], "m", max_attempts=3, deadline=time.perf_counter() + 60)
    assert again.next() is None  # reopened half a second ago: no last resort yet
    assert again.final_error().code == NO_CHANNEL
    clock.now += 0.5
    taken = AttemptPlan(board, [routes[0]], "m", max_attempts=3, deadline=time.perf_counter() + 60).next()
    assert taken is not None and taken.route.channel.name == "c1"
    assert AttemptPlan(board, [routes[0]], "m", max_attempts=3, deadline=time.perf_counter() + 60).next() is None  # one a second


def test_the_last_resort_can_be_turned_off(clock, writes):
    board = HealthBoard(failures=2, cooldown=5.0, clock=clock, store=RecordedWrites(writes), last_resort=0)
    route = route_for(channel(), Timeouts())
    open_channel(board, route)
    clock.now += 4
    assert AttemptPlan(board, [route], "m", max_attempts=3, deadline=time.perf_counter() + 60).next() is None


def rate_limit(seconds: float | None) -> RateLimitError:
    error = RateLimitError("slow down", retryable=True, retry_after=seconds)
    error.upstream_status = 429
    return error


def test_every_key_rate_limited_is_a_429_with_the_shortest_wait(board, clock):
    routes = [route_for(channel(id=1, name="c1", keys=("sk-key-aaaaaaaa1", "sk-key-bbbbbbbb2")), Timeouts()),
              route_for(channel(id=2, name="c2"), Timeouts())]  # fmt: skip
    plan = AttemptPlan(board, routes, "gpt-x", max_attempts=5, deadline=time.perf_counter() + 60)
    for wait in (30, 12, 20):
        plan.failed(plan.next(), rate_limit(wait))
    assert plan.next() is None
    error = plan.final_error()
    assert (error.status, error.code, error.retry_after) == (429, RATE_LIMITED, 12)
    clock.now += 2
    later = AttemptPlan(board, routes, "gpt-x", max_attempts=5, deadline=time.perf_counter() + 60)
    assert later.next() is None  # no attempt: every key is still cooling down
    error = later.final_error()
    assert (error.status, error.retry_after) == (429, 10) and "'gpt-x'" in error.message


def test_a_rate_limited_key_beside_a_channel_that_is_down_is_a_503(board, clock):
    routes = [route_for(channel(id=1, name="c1"), Timeouts()), route_for(channel(id=2, name="c2"), Timeouts())]
    open_channel(board, routes[1])
    lease = take(board, routes[0])
    board.failed(lease, rate_limit(30))
    lease.release()
    plan = AttemptPlan(board, routes, "gpt-x", max_attempts=5, deadline=time.perf_counter() + 60)
    assert plan.next() is None  # c1's key waits 30 s; c2 opened just now (no last resort yet)
    error = plan.final_error()
    assert (error.status, error.code) == (503, NO_CHANNEL)


def test_broken_streams_count_although_each_head_arrived(board, clock):
    route = route_for(channel(), Timeouts())
    dropped = UpstreamError("the upstream dropped the stream", retryable=True)
    lease = take(board, route)
    board.succeeded(lease, head=True)
    board.stream_ended(lease, dropped, done=False)
    lease.release()
    assert board.health(1).breaker.failures == 1
    lease = take(board, route)
    board.succeeded(lease, head=True)  # the next head does not erase the first break
    assert board.health(1).breaker.failures == 1
    board.stream_ended(lease, dropped, done=False)
    lease.release()
    assert board.lease(route, None) == "cooling down"
    clock.now += 5
    probe = take(board, route)
    board.succeeded(probe, head=True)  # the probe's head closes the breaker ...
    assert board.health(1).breaker.state == CLOSED
    board.stream_ended(probe, dropped, done=False)  # ... and its broken stream opens it again at once
    probe.release()
    assert board.health(1).breaker.state == OPEN


def test_a_whole_stream_resets_the_count_and_a_client_leaving_leaves_it(board):
    route = route_for(channel(), Timeouts())
    dropped = UpstreamError("the upstream dropped the stream", retryable=True)
    lease = take(board, route)
    board.succeeded(lease, head=True)
    board.stream_ended(lease, dropped, done=False)
    lease = take(board, route)
    board.succeeded(lease, head=True)
    board.stream_ended(lease, None, done=False)  # the client left: no news of the channel
    assert board.health(1).breaker.failures == 1
    lease = take(board, route)
    board.succeeded(lease, head=True)
    board.stream_ended(lease, None, done=True)
    assert board.health(1).breaker.failures == 0
