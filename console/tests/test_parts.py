"""The console's small parts on their own: sessions, limiter, chart."""

from __future__ import annotations

from datetime import date

from gateway_console.chart import DAYS, spending_chart
from gateway_console.ratelimit import SignInLimiter, SlidingWindow
from gateway_console.sessions import Signer
from gateway_console.web import safe_next
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


def test_limiter_windows_slide_and_success_clears_a_name():
    window = SlidingWindow(2, 10)
    window.add("x", now=0)
    window.add("x", now=1)
    assert window.retry_after("x", now=2) == 8
    assert window.retry_after("x", now=10.5) == 0
    limiter = SignInLimiter(per_address=100, per_name=2, window=60)
    limiter.failed("Alice")
    limiter.failed("alice")
    assert limiter.retry_after("1.2.3.4", "ALICE") > 0
    limiter.succeeded("alice")
    assert limiter.retry_after("1.2.3.4", "alice") == 0


def test_next_is_only_ever_a_console_path():
    assert safe_next("/console", "/console/logs?key=1") == "/console/logs?key=1"
    for bad in ("https://evil.example/", "//evil.example/console/", "/consolex", "/console\\\\evil", None):
        assert safe_next("/console", bad) == "/console/keys"


def test_chart_stacks_days_and_folds_small_models_into_other():
    rows = [DailySpending("2026-01-30", f"m{i}", (i + 1) * 1000, requests=1, errors=0) for i in range(8)]
    rows.append(DailySpending("2025-12-01", "old", 5, requests=1, errors=0))  # before the window
    chart = spending_chart(rows, date(2026, 1, 1))
    assert len(chart.bars) == 6  # five named models and "other" on the one day
    assert [name for _, name, _ in chart.legend] == ["m7", "m6", "m5", "m4", "m3", "other"]
    assert chart.total == "0.036"  # 36,000 micro-USD
    assert len(chart.labels) == (DAYS + 6) // 7
    assert spending_chart([], date(2026, 1, 1)).empty
