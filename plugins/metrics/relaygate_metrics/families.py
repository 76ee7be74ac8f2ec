"""Every metric the gateway exports: its name, kind, labels and meaning.

This table is the one source of the metric names: the recorder creates them from
it, ``docs/operations.md`` lists them (a test checks both agree) and the Grafana
dashboard's queries may name only these.

Labels are bounded: the names an operator configured (protocol, endpoint, model
served by a channel, channel, group, policy) and small enumerations (status
class, error kind, token kind); never a key, a secret, or text a client chose.
A model no channel serves is counted as ``other``.
"""

from __future__ import annotations

import attrs

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"

# seconds: from a fast local answer to a long generation
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# seconds: a database or Redis round trip, a group commit
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


@attrs.frozen
class Family:
    """One metric. ``name`` is the exported name (a counter's ends in ``_total``);
    ``mode`` is how a gauge's values from several worker processes combine."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()
    mode: str = "livesum"

    def samples(self) -> tuple[str, ...]:
        """The sample names it exposes (what a query may name)."""
        if self.kind == HISTOGRAM:
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)


REQUEST = ("protocol", "endpoint", "model", "channel", "status_class", "group")

FAMILIES = (
    Family("relaygate_requests_total", COUNTER, "Requests finished, by how they ended.", REQUEST),
    Family(
        "relaygate_errors_total", COUNTER,
        "Requests that failed, by kind: client (the request's own fault, or the client went away), "
        "policy (refused by the policy named), upstream (every channel failed), gateway (the gateway or its store failed).",
        ("protocol", "endpoint", "kind", "policy"),
    ),
    Family("relaygate_rate_limit_refusals_total", COUNTER, "Requests refused by a rate limit (429).", ("group",)),
    Family(
        "relaygate_request_duration_seconds", HISTOGRAM, "Time from a request's arrival to its settlement.",
        ("protocol", "endpoint", "model", "status_class"), LATENCY_BUCKETS,
    ),
    Family(
        "relaygate_time_to_first_token_seconds", HISTOGRAM, "Time from a request's arrival to its first output token.",
        ("protocol", "model", "channel"), LATENCY_BUCKETS,
    ),
    Family(
        "relaygate_upstream_attempt_duration_seconds", HISTOGRAM,
        "One upstream attempt, from sending to its answer's head (or its failure), by the upstream's status class.",
        ("channel", "status_class"), LATENCY_BUCKETS,
    ),
    Family("relaygate_failovers_total", COUNTER, "Attempts that moved on to another channel after this one failed.", ("channel",)),
    Family("relaygate_retries_total", COUNTER, "Attempts that tried this channel again with another of its keys.", ("channel",)),
    Family(
        "relaygate_tokens_total", COUNTER, "Tokens billed: input (cached included), output, and cached input.",
        ("model", "channel", "group", "kind"),
    ),
    Family("relaygate_cost_micro_usd_total", COUNTER, "Cost charged, in micro-USD.", ("model", "channel", "group")),
    Family("relaygate_requests_in_flight", GAUGE, "Gateway requests being served."),
    Family("relaygate_streams_in_flight", GAUGE, "Streams being sent to clients."),
    Family(
        "relaygate_breaker_open", GAUGE,
        "1 while a circuit breaker is open in some worker, else 0; key is 'channel' for the channel's own breaker, "
        "else the upstream key's position in the channel.",
        ("channel", "key"), mode="livemax",
    ),
    Family("relaygate_holds_open", GAUGE, "Reservations of money not yet settled (read at each scrape).", mode="livemostrecent"),
    Family(
        "relaygate_oldest_hold_age_seconds", GAUGE, "Age of the oldest reservation not yet settled (0: none).",
        mode="livemostrecent",
    ),
    Family("relaygate_store_write_backlog", GAUGE, "Store writes queued or running, not yet committed.", ("store",)),
    Family(
        "relaygate_store_commit_seconds", HISTOGRAM,
        "Time a store write takes to be durable (SQLite: one group commit; PostgreSQL: one write statement).",
        ("store",), STORE_BUCKETS,
    ),
    Family(
        "relaygate_store_round_trip_seconds", HISTOGRAM, "A query's round trip to the store (measured at each scrape).",
        ("store",), STORE_BUCKETS,
    ),
    Family(
        "relaygate_redis_round_trip_seconds", HISTOGRAM, "A PING's round trip to Redis, when configured (measured at each scrape).",
        (), STORE_BUCKETS,
    ),
    Family(
        "relaygate_redis_unreachable_total", COUNTER,
        "Times Redis could not be reached for shared state, by kind and what was done (open: served without it; closed: refused).",
        ("kind", "outcome"),
    ),
)  # fmt: skip

BY_NAME = {family.name: family for family in FAMILIES}
