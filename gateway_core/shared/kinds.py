"""The shared-state kind the core registers through ``register_shared_state``: in
this process (the default). Redis (``[gateway] redis``) is the first-party plugin
``relaygate-redis``'s (``plugins/redis``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hookspecs import hookimpl
from ..shared_state import SharedStateKind
from .in_process import InProcessKind

if TYPE_CHECKING:
    from ..hookspecs import RegisterSharedState


BUILT_IN: tuple[SharedStateKind, ...] = (InProcessKind(),)


@hookimpl
def register_shared_state(register: RegisterSharedState) -> None:
    for kind in BUILT_IN:
        register(kind)
