"""Invalidation messages: what changed, and what a gateway forgets when it hears of it.

A message is a small JSON object: ``{"k": kind, ...}`` and the ``o`` (origin)
of the process that sent it. The admin layer sends one after each write
(:class:`gateway_core.admin.Caches`), channel health sends breaker changes;
every gateway applies them with :func:`apply`. A gateway's caches keep a
one-second lifetime as a safety net for a message lost while Redis was away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base.lazy import LoggerWhenUsed

if TYPE_CHECKING:
    from ..gateway import Gateway

log = LoggerWhenUsed("relaygate.shared")

KEY, USER, KEYS, GROUP, CHANNELS, PRICES = "key", "user", "keys", "group", "channels", "prices"
BREAKER, KEY_DISABLED, FAILURES = "breaker", "key_disabled", "failures"


def message(kind: str, ident: int | None = None) -> dict[str, Any]:
    """``{"k": kind}``, with ``"id"`` for a key's or a user's change."""
    return {"k": kind} if ident is None else {"k": kind, "id": ident}


def apply(gateway: Gateway, event: dict[str, Any], origin: str) -> None:
    """Drop what ``event`` makes stale in this gateway's caches (or update its
    breakers). Events of this process's own origin about breakers are skipped:
    it applied them when it sent them."""
    kind = event.get("k")
    keys, prices = gateway.keys, gateway.prices
    if kind == KEY:
        keys.invalidate_key(int(event["id"]))
    elif kind == USER:
        keys.invalidate_user(int(event["id"]))
    elif kind == KEYS:
        keys.invalidate()
    elif kind == GROUP:
        keys.invalidate()
        if prices is not None:
            prices.invalidate()
    elif kind == CHANNELS:
        gateway.router.invalidate()
    elif kind == PRICES:
        if prices is not None:
            prices.invalidate()
    elif kind in (BREAKER, KEY_DISABLED, FAILURES):
        shared = gateway.health.shared
        if shared is not None and event.get("o") != origin:
            shared.apply(event)
    else:
        log.warning("unknown invalidation message ignored", kind=kind)


def forget_everything(gateway: Gateway) -> None:
    """After the subscriber (re)connects: messages may have been missed."""
    gateway.keys.invalidate()
    gateway.router.invalidate()
    if gateway.prices is not None:
        gateway.prices.invalidate()
