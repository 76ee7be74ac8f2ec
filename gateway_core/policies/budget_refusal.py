"""The refusal of a request that a budget cannot cover: it names the budget, what
its window has spent, and when it resets; a reset within the hour also gives the
client a ``Retry-After``."""

from __future__ import annotations

import datetime as dt

from ..errors import InsufficientQuotaError
from ..money import format_usd
from ..store.request_store import HoldRefused

NEAR_RESET_SECONDS = 3600.0  # a reset this close is worth waiting for: Retry-After


def budget_refusal(refused: HoldRefused, now: float, max_output: int, *, team: bool = False) -> InsufficientQuotaError:
    """``team``: the key is a team's, whose owner's budget is the team's (docs/teams.md)."""
    use = refused.budget
    resets_at = refused.resets_at if refused.resets_at is not None else now
    wait = max(0.0, resets_at - now)
    when = dt.datetime.fromtimestamp(resets_at, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    whose = "Your team's" if team and not use.is_key else use.whose
    message = (
        f"{whose} {use.period} budget of {format_usd(refused.limit)} USD is spent: {format_usd(refused.used)} USD "
        f"counted in this window (requests in progress included), and this request may cost up to "
        f"{format_usd(refused.needed)} USD (for up to {max_output} output tokens). "
        f"It resets at {when} (in {_duration(wait)})."
    )
    retry_after = wait if wait <= NEAR_RESET_SECONDS else None
    return InsufficientQuotaError(message, code="budget_exceeded", retry_after=retry_after)


def _duration(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    hours = round(minutes / 60)
    return f"{hours} hours" if hours < 48 else f"{round(hours / 24)} days"
