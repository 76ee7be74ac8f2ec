"""The Redis shared state as a plugin: the ``redis`` kind, chosen when ``[gateway]
redis`` (``--redis``, ``RELAYGATE_REDIS``) is set (``register_shared_state``).
Loading it imports no Redis client: redis-py is imported when Redis is configured."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway_core import hookimpl

from .kind import RedisKind

if TYPE_CHECKING:
    from gateway_core.hookspecs import RegisterSharedState


@hookimpl
def register_shared_state(register: RegisterSharedState) -> None:
    register(RedisKind())
