"""Groups: price ratios that users are opened to and channels serve, with
default rate limits for the keys in them."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from ..store.group_names import group_name_problem
from ..records import GroupRecord
from .context import Admin
from .port import LimitChanges
from .errors import Invalid
from .rules import check_limits

UNIT_RATIO_PPM = 1_000_000  # a ratio of 1: list prices
MAX_RATIO = 1_000_000  # a million times list prices: more is a typo


def check_group_names(names: Iterable[str]) -> None:
    """Refuse a name that cannot name a group (:func:`gateway_core.store.group_names.group_name_problem`)."""
    for name in names:
        problem = group_name_problem(name)
        if problem is not None:
            raise Invalid(problem)


async def set_group(admin: Admin, name: str, *, ratio_ppm: int | None = None, limits: LimitChanges | None = None) -> GroupRecord:
    """Create a group if it is missing (ratio 1), then change its ratio when
    given and the default limits given (``None``: not set, ``0``: unlimited)."""
    check_group_names([name])
    if ratio_ppm is not None and ratio_ppm < 0:
        raise Invalid("must not be negative", "ratio")
    check_limits(limits or {})
    group = await admin.store.set_group(name, ratio_ppm=ratio_ppm, limits=dict(limits or {}))
    admin.caches.group_changed()
    return group


async def list_groups(admin: Admin) -> list[GroupRecord]:
    """Every group by name, with its members and live keys counted."""
    return await admin.store.list_groups()


def parse_ratio(text: str) -> int:
    """A price ratio such as ``1``, ``0.8`` or ``1.25`` in parts per million: the one rule
    of the CLI's ``--ratio``, the console's group form and the API's ``ratio`` (``x-ratio``)."""
    try:
        ratio = Decimal(text.strip())
    except InvalidOperation:
        raise Invalid(f"must be a decimal number like 1 or 0.8, got {text!r}", "ratio") from None
    ppm = ratio * UNIT_RATIO_PPM
    if not ratio.is_finite() or ratio < 0 or ppm != ppm.to_integral_value():
        raise Invalid(f"must be a number >= 0 with at most 6 decimals, got {text!r}", "ratio")
    if ratio > MAX_RATIO:
        raise Invalid(f"must be at most {MAX_RATIO}, got {text!r}", "ratio")
    return int(ppm)


def format_ratio(ratio_ppm: int) -> str:
    """``800_000`` → ``"0.8"``."""
    return f"{(Decimal(ratio_ppm) / UNIT_RATIO_PPM).normalize():f}"
