"""The log line's own processors write what structlog's would."""

from __future__ import annotations

import datetime

import structlog

from gateway_core.runtime import logs
from gateway_core.runtime.logs import UtcTimestamp, format_exc_info_if_any


def test_the_timestamp_is_structlogs_iso_utc_format(monkeypatch):
    stamp = UtcTimestamp()
    for when in (
        datetime.datetime(2026, 11, 24, 17, 46, 32, 794402, tzinfo=datetime.timezone.utc),
        datetime.datetime(2026, 11, 24, 17, 46, 32, 0, tzinfo=datetime.timezone.utc),  # no fraction: none written
        datetime.datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc),
        datetime.datetime(2027, 1, 1, 0, 0, 0, 1, tzinfo=datetime.timezone.utc),
    ):
        nanoseconds = (int(when.timestamp()) * 1_000_000 + when.microsecond) * 1000
        monkeypatch.setattr(logs.time, "time_ns", lambda: nanoseconds)
        expected = when.isoformat().replace("+00:00", "Z")  # what TimeStamper(fmt="iso", utc=True) writes
        assert stamp(None, "info", {})["timestamp"] == expected


def test_an_exception_is_formatted_and_a_plain_line_left_alone():
    plain = {"event": "request", "status": 200}
    assert format_exc_info_if_any(None, "info", dict(plain)) == plain
    try:
        raise ValueError("boom")
    except ValueError:
        line = format_exc_info_if_any(None, "error", {"event": "failed", "exc_info": True})
        reference = structlog.processors.format_exc_info(None, "error", {"event": "failed", "exc_info": True})
    assert "exc_info" not in line and line["exception"] == reference["exception"]
    assert "ValueError: boom" in line["exception"]
