"""The console's small parts on their own: sessions, limiter, chart."""

from __future__ import annotations

from datetime import date

import pytest

from gateway_console.chart import DAYS, spending_chart
from gateway_console.sessions import Signer
from gateway_console.web import safe_next
from gateway_core.ratelimit.signin import InProcessSignInThrottle, SignInRule, SignInThrottled
from gateway_core.records import DailySpending


def test_cookies_and_csrf_tokens_are_signed_per_purpose():
    signer, other = Signer("a" * 64), Signer("b" * 64)
    cookie = signer.session_cookie("tok")
    assert signer.token_from_cookie(cookie) == "tok"
    assert other.token_from_cookie(cookie) is None
    assert signer.token_from_cookie("tok." + signer.csrf_token("tok")) is None  # a CSRF token is no cookie
    assert signer.check_csrf("tok", signer.csrf_token("tok")) and not signer.check_csrf("tok", None)
    assert not signer.check_csrf("other", signer.csrf_token("tok"))
    assert not signer.check_signin_csrf(None, signer.signin_csrf("n"))


async def test_sign_in_throttle_counts_per_account_and_address_and_forgets():
    clock = [1000.0]
    throttle = InProcessSignInThrottle(clock=lambda: clock[0])
    rule = SignInRule(free_failures=2, address_free_failures=4, base_delay=1, max_delay=8, window=60)
    for _ in range(2):
        await throttle.attempt("Alice", "x", rule)
    with pytest.raises(SignInThrottled) as refused:
        await throttle.attempt("ALICE", "x", rule)  # names are case-folded
    assert refused.value.retry_after == 1
    await throttle.attempt("alice", "y", rule)  # another address is not delayed
    await throttle.attempt("bob", "x", rule)
    await throttle.attempt("bob", "x", rule)  # the address's fourth failure
    with pytest.raises(SignInThrottled):
        await throttle.attempt("carol", "x", rule)  # now the address waits for any account
    clock[0] += 1.5
    await throttle.attempt("alice", "x", rule)
    await throttle.succeeded("alice", "x")  # the right password: the pair is forgotten
    clock[0] += 1.5
    await throttle.attempt("alice", "x", rule)
    clock[0] += 61
    assert rule.delay(0, 2) == 0 and rule.delay(2, 2) == 1 and rule.delay(5, 2) == 8 and rule.delay(40, 2) == 8


def test_next_is_only_ever_a_console_path():
    assert safe_next("/console", "/console/logs?key=1") == "/console/logs?key=1"
    for bad in ("https://evil.example/", "//evil.example/console/", "/consolex", "/console\\\\evil", None):
        assert safe_next("/console", bad) == "/console/dashboard"


def test_chart_stacks_days_and_folds_small_models_into_other():
    rows = [DailySpending("2026-01-30", f"m{i}", (i + 1) * 1000, requests=1, errors=0) for i in range(8)]
    rows.append(DailySpending("2025-12-01", "old", 5, requests=1, errors=0))  # before the window
    chart = spending_chart(rows, date(2026, 1, 1))
    assert [s.name for s in chart.series] == ["m7", "m6", "m5", "m4", "m3", "other"]  # five named models and "other"
    assert [s.values[29] for s in chart.series] == [8000, 7000, 6000, 5000, 4000, 3000 + 2000 + 1000]
    assert all(not any(s.values[:29]) for s in chart.series)
    assert chart.total == "0.036"  # 36,000 micro-USD
    assert len(chart.labels) == DAYS and chart.labels[0].text == "2026-01-01" and chart.labels[-1].text == "2026-01-30"
    label, cells, total = chart.rows()[29]
    assert cells == ["0.008", "0.007", "0.006", "0.005", "0.004", "0.006"] and total == "0.036"
    data = chart.data()  # what the browser draws: the same texts as the table
    assert data["series"][0]["values"][29] == 0.008 and data["series"][0]["texts"][29] == "0.008"
    assert data["totals"][29] == "0.036" and data["stacked"] is True
    assert spending_chart([], date(2026, 1, 1)).empty


def test_usage_charts_label_buckets_with_utc_times():
    from gateway_console.chart import usage_charts
    from gateway_core.records import UsageTotal

    start = 1_700_000_000.0 - 1_700_000_000.0 % 3600
    points = [(start, UsageTotal(None, 3, 30, 7, 1_500, 1)), (start + 3600, UsageTotal(None, 1_234, 0, 0, 0, 0))]
    spend, requests, tokens = usage_charts(points, 3600)
    assert [label.text for label in spend.labels] == ["2023-11-14 22:00 UTC", "2023-11-14 23:00 UTC"]
    assert spend.series[0].values == (1_500, 0) and spend.rows()[0][1] == ["0.0015"]
    assert requests.rows()[1][1] == ["1,234", "0"] and requests.kind == "line"
    assert tokens.rows()[0][1:] == (["30", "7"], "37")
