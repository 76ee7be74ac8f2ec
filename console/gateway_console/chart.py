"""Spending per day and per model as a stacked bar chart, laid out here and
drawn as inline SVG by the ``chart.html`` template (no script, no library)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

import attrs

from gateway_core.money import format_usd
from gateway_core.records import DailySpending

DAYS = 30
WIDTH, HEIGHT = 600, 220
LEFT, BOTTOM, TOP = 56, 24, 10
MAX_SERIES = 6  # the costliest models get a colour each, the rest share "other"
OTHER = "other"


@attrs.frozen
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: int  # colour index
    title: str


@attrs.frozen
class Chart:
    bars: tuple[Bar, ...]
    legend: tuple[tuple[int, str, str], ...]  # (colour index, model, total)
    ticks: tuple[tuple[float, str], ...]  # (y, label)
    labels: tuple[tuple[float, str], ...]  # (x, day)
    total: str
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    bottom: float = HEIGHT - BOTTOM

    @property
    def empty(self) -> bool:
        return not self.bars


def window_start(today: date | None = None) -> tuple[date, float]:
    """The first day of the chart and its Unix time (UTC midnight)."""
    today = today or datetime.now(UTC).date()
    first = today - timedelta(days=DAYS - 1)
    return first, datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp()


def spending_chart(rows: Iterable[DailySpending], first: date) -> Chart:
    """Lay out each day's spending per model (UTC days from ``first``)."""
    days = [first + timedelta(days=i) for i in range(DAYS)]
    index = {d.isoformat(): i for i, d in enumerate(days)}
    by_model: dict[str, int] = defaultdict(int)
    cells: dict[tuple[int, str], int] = defaultdict(int)
    for row in rows:
        cost = row.cost_micros
        if row.day in index and cost > 0:
            by_model[row.model] += cost
            cells[(index[row.day], row.model)] += cost
    ranked = sorted(by_model, key=lambda m: (-by_model[m], m))
    named = ranked[:MAX_SERIES] if len(ranked) <= MAX_SERIES else ranked[: MAX_SERIES - 1]
    series = {model: i for i, model in enumerate(named)}
    other = len(named)
    stacks: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for (day, model), cost in cells.items():
        stacks[day][series.get(model, other)] += cost
    peak = max((sum(s.values()) for s in stacks.values()), default=0)
    scale_top = _nice(peak)
    plot_h = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - LEFT) / DAYS
    bars: list[Bar] = []
    for day, stack in sorted(stacks.items()):
        y = HEIGHT - BOTTOM
        for colour in sorted(stack):
            height = stack[colour] / scale_top * plot_h
            y -= height
            name = named[colour] if colour < len(named) else OTHER
            title = f"{days[day].isoformat()} · {name}: {format_usd(stack[colour])} USD"
            bars.append(Bar(round(LEFT + day * slot + 1, 2), round(y, 2), round(slot - 2, 2), round(height, 2), colour, title))
    legend = [(i, model, format_usd(by_model[model])) for i, model in enumerate(named)]
    if len(ranked) > len(named):
        legend.append((other, OTHER, format_usd(sum(by_model[m] for m in ranked[len(named):]))))
    ticks = tuple((round(HEIGHT - BOTTOM - f * plot_h, 2), format_usd(int(scale_top * f))) for f in (0, 0.5, 1)) if peak else ()
    labels = tuple((round(LEFT + i * slot + slot / 2, 2), days[i].strftime("%m-%d")) for i in range(0, DAYS, 7))
    return Chart(tuple(bars), tuple(legend), ticks, labels, format_usd(sum(by_model.values())))


def _nice(value: int) -> int:
    """A round number of micro-USD at least ``value`` for the top of the scale."""
    if value <= 0:
        return 1
    step = 1
    while step * 10 < value:
        step *= 10
    for factor in (1, 2, 5, 10):
        if step * factor >= value:
            return step * factor
    return step * 10
