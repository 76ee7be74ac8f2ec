"""Charts: figures laid out here as labels and series, written by the
``chart.html`` template twice — as a ``<table>`` (read without script and by
screen readers) and as JSON that ``static/charts.js`` draws with Chart.js
(``static/vendor/``), the values readable on hover. Both show the same texts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import attrs

from gateway_core.money import format_usd
from gateway_core.records import DailySpending, UsageTotal

from .i18n import N_, _

DAYS = 30
MAX_SERIES = 6  # the costliest models get a colour each, the rest share "other"
OTHER = N_("other")
USD, COUNT = "usd", "count"  # what a chart's values are: micro-USD, or counts


@attrs.frozen
class Label:
    """One point of the x axis; ``at``: a UTC time the browser shows in its own zone."""

    text: str
    at: float | None = None

    @property
    def iso(self) -> str:
        return datetime.fromtimestamp(self.at or 0, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@attrs.frozen
class Series:
    name: str
    values: tuple[int, ...]


@attrs.frozen
class Chart:
    """``series`` of values (micro-USD or counts) over ``labels``; ``stacked``
    bars add up to a total per label."""

    key: str  # unique on its page
    title: str
    axis: str  # the labels' column heading
    unit: str
    labels: tuple[Label, ...]
    series: tuple[Series, ...]
    stacked: bool = False
    kind: str = "bar"
    step: float | None = None  # seconds between labels that are times
    empty_text: str = ""  # empty: the template's "Nothing in this span."

    @property
    def empty(self) -> bool:
        return not any(any(s.values) for s in self.series)

    def text(self, value: int) -> str:
        return format_usd(value) if self.unit == USD else f"{value:,}"

    @property
    def heading_unit(self) -> str:
        return " (USD)" if self.unit == USD else ""

    @property
    def with_total(self) -> bool:
        return self.stacked and len(self.series) > 1

    def rows(self) -> list[tuple[Label, list[str], str]]:
        """The table: per label, each series' text and (stacked) their total."""
        return [
            (label, [self.text(s.values[i]) for s in self.series], self.text(sum(s.values[i] for s in self.series)))
            for i, label in enumerate(self.labels)
        ]

    def totals(self) -> list[tuple[str, str]]:
        """Each series' total over the whole span."""
        return [(s.name, self.text(sum(s.values))) for s in self.series]

    @property
    def total(self) -> str:
        return self.text(sum(sum(s.values) for s in self.series))

    def data(self) -> dict[str, Any]:
        """What ``charts.js`` draws (the values as numbers, and as the table's texts)."""
        scale = 1_000_000 if self.unit == USD else 1
        return {
            "kind": self.kind, "stacked": self.stacked, "unit": self.unit, "step": self.step,
            "labels": [label.text for label in self.labels],
            "times": [label.at for label in self.labels] if self.step else None,
            "series": [{"name": s.name, "values": [v / scale for v in s.values], "texts": [self.text(v) for v in s.values]} for s in self.series],
            "totals": [text for _, _, text in self.rows()] if self.with_total else None,
        }  # fmt: skip


# --- spending per day and model (wallet, site usage) -----------------------------------


def window_start(today: date | None = None) -> tuple[date, float]:
    """The first day of the spending chart and its Unix time (UTC midnight)."""
    today = today or datetime.now(UTC).date()
    first = today - timedelta(days=DAYS - 1)
    return first, datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp()


def spending_chart(rows: Iterable[DailySpending], first: date) -> Chart:
    """Each UTC day's spending from ``first``, stacked by model (the costliest
    :data:`MAX_SERIES`, or one fewer and ``other``)."""
    days = [first + timedelta(days=i) for i in range(DAYS)]
    index = {d.isoformat(): i for i, d in enumerate(days)}
    by_model: dict[str, int] = defaultdict(int)
    cells: dict[tuple[int, str], int] = defaultdict(int)
    for row in rows:
        if row.day in index and row.cost_micros > 0:
            by_model[row.model] += row.cost_micros
            cells[(index[row.day], row.model)] += row.cost_micros
    ranked = sorted(by_model, key=lambda m: (-by_model[m], m))
    named = ranked if len(ranked) <= MAX_SERIES else ranked[: MAX_SERIES - 1]
    columns = {model: i for i, model in enumerate(named)}
    values = [[0] * DAYS for _ in range(len(named) + (len(ranked) > len(named)))]
    for (day, model), cost in cells.items():
        values[columns.get(model, len(named))][day] += cost
    names = [*named, _(OTHER)][: len(values)]
    return Chart(
        "spending", _("Spending per UTC day and model, last %(days)s days", days=DAYS), _("Day (UTC)"), USD,
        tuple(Label(d.isoformat()) for d in days), tuple(Series(n, tuple(v)) for n, v in zip(names, values)),
        stacked=True, empty_text=_("No spending in the last %(days)s days.", days=DAYS),
    )  # fmt: skip


# --- usage over time (dashboard) -------------------------------------------------------


def usage_charts(points: Sequence[tuple[float, UsageTotal]], step: float) -> list[Chart]:
    """Spend, requests and errors, and tokens per time bucket (``step`` seconds)."""
    fmt = "%Y-%m-%d %H:%M UTC" if step < 86_400 or any(at % 86_400 for at, _ in points) else "%Y-%m-%d UTC"
    labels = tuple(Label(datetime.fromtimestamp(at, UTC).strftime(fmt), at) for at, _ in points)

    def series(name: str, field: str) -> Series:
        return Series(name, tuple(int(getattr(total, field)) for _, total in points))

    axis = _("Starting at")
    return [
        Chart("spend", _("Spend"), axis, USD, labels, (series(_("Spend"), "cost_micros"),), step=step),
        Chart("requests", _("Requests and errors"), axis, COUNT, labels,
              (series(_("Requests"), "requests"), series(_("Errors"), "errors")), kind="line", step=step),
        Chart("tokens", _("Tokens"), axis, COUNT, labels,
              (series(_("Input tokens"), "input_tokens"), series(_("Output tokens"), "output_tokens")), stacked=True, step=step),
    ]  # fmt: skip
