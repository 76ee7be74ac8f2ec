"""The metrics' contract: what a scrape exports is the families table, docs/operations.md
lists each with its labels, every query of the Grafana dashboard names exported
metrics (and every metric has a panel), and the in-memory counts reach
prometheus-client with Prometheus's bucket rule (``le``: less than or equal)."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway_core.config import Config
from gateway_core.errors import InternalError, InvalidRequestError, RateLimitError, UpstreamTimeoutError
from relaygate_metrics import Metrics
from relaygate_metrics.families import FAMILIES, HISTOGRAM
from relaygate_metrics.recorder import error_kind
from gateway_core.request.outcome import Outcome
from gateway_core.store.request_store import StoreUnavailable
from gateway_core.testing import make_context

ROOT = Path(__file__).resolve().parents[3]  # the repository: its docs
DASHBOARD = ROOT / "docs" / "grafana" / "relaygate.json"
METRIC = re.compile(r"\brelaygate_[a-z_]+\b")
EXPORTED = {sample for family in FAMILIES for sample in family.samples()}


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai",))


def test_a_scrape_exports_exactly_the_families(seed, start_gateway):
    gateway = start_gateway()
    with urllib.request.urlopen(gateway.url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    exported = {}
    for family in text_string_to_metric_families(text):
        exported[family.name] = family.type
    expected = {f.name.removesuffix("_total"): f.kind for f in FAMILIES}
    assert exported == expected


def test_docs_list_every_metric_with_its_labels():
    rows = {}
    for line in (ROOT / "docs" / "operations.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`relaygate_"):
            rows[cells[0].strip("`")] = (cells[1], tuple(re.findall(r"`(\w+)`", cells[2])))
    assert rows == {f.name: (f.kind, f.labels) for f in FAMILIES}


def dashboard_queries() -> list[str]:
    def panels(items):
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", ()))

    board = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in panels(board["panels"]) for target in panel.get("targets", ())]


def test_every_dashboard_query_names_exported_metrics_only():
    queries = dashboard_queries()
    assert queries
    for query in queries:
        named = set(METRIC.findall(query))
        assert named, f"the query names no relaygate metric: {query}"
        assert named <= EXPORTED, f"not exported: {sorted(named - EXPORTED)} in {query}"


def test_every_metric_has_a_panel():
    named = {name for query in dashboard_queries() for name in METRIC.findall(query)}
    for family in FAMILIES:
        assert named & set(family.samples()), f"no panel shows {family.name}"


def test_the_dashboard_uses_the_datasource_variable():
    board = json.loads(DASHBOARD.read_text())
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource"]
    assert all(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"} for p in board["panels"])


def test_counts_reach_prometheus_with_bucket_bounds_included():
    metrics = Metrics()
    family = next(f for f in FAMILIES if f.name == "relaygate_upstream_attempt_duration_seconds")
    assert family.kind == HISTOGRAM and 0.5 in family.buckets
    for seconds in (0.5, 0.5000001, 400.0):  # on a bound, just above it, past the last
        metrics.counts.observe(family.name, ("up", "2xx"), seconds)
    metrics.counts.add("relaygate_failovers_total", ("up",), 2)
    metrics.flush()
    text = metrics.exposition().decode()
    assert 'relaygate_upstream_attempt_duration_seconds_bucket{channel="up",le="0.5",status_class="2xx"} 1.0' in text
    assert 'relaygate_upstream_attempt_duration_seconds_bucket{channel="up",le="1.0",status_class="2xx"} 2.0' in text
    assert 'relaygate_upstream_attempt_duration_seconds_bucket{channel="up",le="300.0",status_class="2xx"} 2.0' in text
    assert 'relaygate_upstream_attempt_duration_seconds_bucket{channel="up",le="+Inf",status_class="2xx"} 3.0' in text
    assert 'relaygate_upstream_attempt_duration_seconds_sum{channel="up",status_class="2xx"} 401.0000001' in text
    assert 'relaygate_failovers_total{channel="up"} 2.0' in text
    metrics.flush()  # nothing new: nothing added twice
    assert 'relaygate_failovers_total{channel="up"} 2.0' in metrics.exposition().decode()


@pytest.mark.parametrize(
    ("refused_by", "outcome", "kind"),
    [
        ("rate_limit", Outcome(429, error=RateLimitError("slow down")), ("policy", "rate_limit")),
        ("quota", Outcome(503, error=StoreUnavailable("the store is down")), ("gateway", "")),
        (None, Outcome(400, error=InvalidRequestError("bad")), ("client", "")),
        (None, Outcome(504, error=UpstreamTimeoutError("slow upstream")), ("upstream", "")),
        (None, Outcome(200, "timeout", UpstreamTimeoutError("stream stalled")), ("upstream", "")),
        (None, Outcome(500, error=InternalError("bug")), ("gateway", "")),
        (None, Outcome(499, "client_gone"), ("client", "")),
    ],
)
def test_how_a_failed_request_counts(refused_by, outcome, kind):
    ctx = make_context()
    ctx.refused_by = refused_by
    assert error_kind(ctx, outcome) == kind
