"""Channel health for people: what ``relaygate channel list`` and the console show.

It combines each channel's stored state (enabled, upstream keys disabled and
why) with the breaker states the workers reported (``channel_health``). A
breaker reported open whose cool-down has passed shows as ``half_open``: the
next request through that worker is its probe.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from ..records import ChannelRecord, key_fingerprint, mask_secret
from ..store.request_store import CHANNEL_SLOT, BreakerReport


def describe_health(
    channel: ChannelRecord, reports: list[BreakerReport], now: float, in_flight: int | None = None, *, needs_key: bool = True
) -> dict[str, Any]:
    """``{"state", "summary", "breaker", "keys", "in_flight"}`` for one channel.

    ``state`` is ``disabled`` (by an operator), ``open`` / ``half_open`` (the
    channel's breaker), ``no_key`` (its type needs an upstream key and it has
    none), ``no_usable_key``, ``degraded`` (some keys out) or ``ok``.
    Keys appear by position and masked form, never in full.
    """
    by_slot = {report.key_slot: report for report in reports}
    breaker = _breaker(by_slot.get(CHANNEL_SLOT), now)
    keys = []
    for index, secret in enumerate(channel.api_keys):
        key: dict[str, Any] = {"index": index, "key": mask_secret(secret), "state": "ok"}
        disabled = channel.key_disabled(secret)
        state = _breaker(by_slot.get(key_fingerprint(secret)), now)
        if disabled is not None:
            key.update(state="disabled", reason=disabled.reason, since=disabled.at)
        elif state is not None and state["state"] != "closed":
            key.update(state=state["state"], reason=state["last_error"], until=state["until"])
        keys.append(key)
    out = [k for k in keys if k["state"] != "ok"]
    usable = [k for k in keys if k["state"] != "disabled"]
    if not channel.enabled:
        status, summary = "disabled", "disabled by an operator"
    elif breaker is not None and breaker["state"] != "closed":
        status = breaker["state"]
        if status == "open":
            summary = f"open until {_clock(breaker['until'])} after {breaker['failures']} failure(s): {breaker['last_error'] or '?'}"
        else:
            summary = f"half-open (cool-down over; the next request probes): {breaker['last_error'] or '?'}"
    elif needs_key and not channel.api_keys:
        status, summary = "no_key", "needs an upstream key: it has none"
    elif channel.api_keys and not usable:
        status, summary = "no_usable_key", "every upstream key is disabled"
    elif out:
        status, summary = "degraded", f"{len(out)} of {len(keys)} upstream key(s) out"
    else:
        status, summary = "ok", "ok"
    return {"state": status, "summary": summary, "breaker": breaker, "keys": keys, "in_flight": in_flight}


def key_summary(key: Mapping[str, Any]) -> str:
    """``#1 sk-a…wxyz disabled (upstream answered 401: …)`` — one key for a table cell."""
    text = f"#{key['index']} {key['key']} {key['state']}"
    if key["state"] == "open" and key.get("until"):
        text += f" until {_clock(key['until'])}"
    if key.get("reason"):
        text += f" ({key['reason'][:80]})"
    return text


def _breaker(report: BreakerReport | None, now: float) -> dict[str, Any] | None:
    if report is None:
        return None
    state = report.state
    if state == "open" and (report.until or 0) <= now:
        state = "half_open"
    return {
        "state": state,
        "failures": report.failures,
        "until": report.until if state == "open" else None,
        "last_error": report.last_error,
        "updated_at": report.updated_at,
        "worker": report.worker,
    }


def _clock(when: float | None) -> str:
    if not when:
        return "-"
    return dt.datetime.fromtimestamp(when, dt.timezone.utc).strftime("%H:%M:%SZ")
