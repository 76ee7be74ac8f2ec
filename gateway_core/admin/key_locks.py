"""Limits of an API key set by the gateway's operator, which the key's owner
cannot loosen.

When an operator (an admin operation without ``owner``: the CLI, the admin
pages, the management API) sets a key's quota, models, allowed networks, rate
limits or budgets, or disables it, the value is kept in the key's ``locks``
(``api_keys.locks``, a JSON object: field → the operator's value). The key's
owner (the console) may then only tighten it: a lower quota, fewer models, a
narrower network, a lower budget; never clear it, raise it, or enable a key an
operator disabled. The operator clearing a limit (or enabling the key) lifts its
lock.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

from ..records import KeyRecord
from .errors import Locked

# the fields a lock can hold, in the words a refusal uses
LOCKABLE = {
    "quota_micros": "quota",
    "models": "allowed models",
    "allow_ips": "allowed networks",
    "enabled": "disabled state",
    "rpm": "requests-per-minute limit",
    "tpm": "tokens-per-minute limit",
    "concurrency": "concurrency limit",
    "daily_budget_micros": "daily budget",
    "weekly_budget_micros": "weekly budget",
    "monthly_budget_micros": "monthly budget",
}
_LISTS = ("models", "allow_ips")


def key_fields(key: KeyRecord) -> dict[str, Any]:
    """The lockable fields of ``key`` as they are stored."""
    return {
        "quota_micros": key.quota_micros,
        "models": list(key.models),
        "allow_ips": list(key.allow_ips),
        "enabled": key.enabled,
        "rpm": key.limits.requests_per_minute,
        "tpm": key.limits.tokens_per_minute,
        "concurrency": key.limits.concurrency,
        "daily_budget_micros": key.budgets.daily,
        "weekly_budget_micros": key.budgets.weekly,
        "monthly_budget_micros": key.budgets.monthly,
    }


def operator_locks(locks: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """``locks`` after an operator changed the fields from ``before`` to ``after``:
    a field set to a limit is locked to it, a field cleared (no limit, enabled) is freed."""
    updated = dict(locks)
    for field, value in after.items():
        if field not in LOCKABLE or (field in before and before[field] == value):
            continue
        if _unlimited(field, value):
            updated.pop(field, None)
        else:
            updated[field] = list(value) if field in _LISTS else value
    return updated


def check_owner_change(locks: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    """Raise :class:`Locked` when the owner's new values loosen a locked field."""
    for field, locked in locks.items():
        if field not in after or field not in LOCKABLE:
            continue
        if not _within(field, after[field], locked):
            raise Locked(
                f"The {LOCKABLE[field]} of this key was set by the gateway's operator; "
                "you may tighten it but not loosen or remove it."
            )


def _unlimited(field: str, value: Any) -> bool:
    if field == "enabled":
        return bool(value)
    if field in _LISTS:
        return not value
    return value is None or (field in ("rpm", "tpm", "concurrency") and value == 0)


def _within(field: str, value: Any, locked: Any) -> bool:
    if field == "enabled":
        return not value  # an operator's disable holds
    if _unlimited(field, value):
        return False
    if field == "models":
        return set(value) <= set(locked)
    if field == "allow_ips":
        return all(_inside(network, locked) for network in value)
    return int(value) <= int(locked)


def _inside(network: str, allowed: Sequence[str]) -> bool:
    try:
        inner = ipaddress.ip_network(network, strict=False)
        return any(
            inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]
            for outer in (ipaddress.ip_network(text, strict=False) for text in allowed)
        )
    except ValueError:
        return False
