"""Counts kept in plain dicts on the request path, handed to prometheus-client in batches.

Recording a request costs a few dict updates (well under a microsecond each);
:meth:`Counts.apply` adds what accumulated to the prometheus-client metrics —
before every scrape and, with several worker processes, every second — so
the cost of prometheus-client (a lock, and with several workers a write to a
memory-mapped file, per value) is paid once per label set and interval, not per
request. Everything here runs on the event loop: no lock is needed.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import Any

Labels = tuple[str, ...]


class Histogram:
    """Observations of one label set: their sum and a count per bucket (the last: +Inf)."""

    __slots__ = ("bounds", "total", "counts")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = bounds
        self.total = 0.0
        self.counts = [0] * (len(bounds) + 1)

    def observe(self, value: float) -> None:
        self.total += value
        self.counts[bisect_left(self.bounds, value)] += 1


class Counts:
    """What was recorded since the last :meth:`apply`, per metric and label set."""

    __slots__ = ("counters", "histograms", "bounds")

    def __init__(self, bounds: Mapping[str, Sequence[float]]) -> None:
        self.bounds = bounds
        self.counters: dict[str, dict[Labels, float]] = {}
        self.histograms: dict[str, dict[Labels, Histogram]] = {}

    def add(self, name: str, labels: Labels, amount: float = 1) -> None:
        by_labels = self.counters.get(name)
        if by_labels is None:
            by_labels = self.counters[name] = {}
        by_labels[labels] = by_labels.get(labels, 0) + amount

    def observe(self, name: str, labels: Labels, value: float) -> None:
        by_labels = self.histograms.get(name)
        if by_labels is None:
            by_labels = self.histograms[name] = {}
        histogram = by_labels.get(labels)
        if histogram is None:
            histogram = by_labels[labels] = Histogram(self.bounds[name])
        histogram.observe(value)

    def apply(self, metrics: dict[str, Any]) -> None:
        """Add everything to the prometheus-client ``metrics`` (by exported name)."""
        for name, by_labels in self.counters.items():
            counter = metrics[name]
            for labels, amount in by_labels.items():
                (counter.labels(*labels) if labels else counter).inc(amount)
        for name, histograms in self.histograms.items():
            metric = metrics[name]
            for labels, histogram in histograms.items():
                child = metric.labels(*labels) if labels else metric
                # prometheus-client keeps one value per bucket (not cumulative) and the sum
                child._sum.inc(histogram.total)
                for bucket, count in zip(child._buckets, histogram.counts):
                    if count:
                        bucket.inc(count)
