"""The metrics as an observer of every app (``register_observers``); ``GET /metrics``
(:mod:`.endpoint`) exports them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from ..gateway import Gateway
    from ..hookspecs import RegisterObserver
    from .recorder import Metrics


def make_metrics(gateway: Gateway) -> Metrics:
    """Models no channel serves are counted as ``other``; the store's write backlog
    and commit times are watched when it tells them."""
    from .recorder import Metrics  # here: every relaygate command loads this plugin, an app alone makes metrics

    metrics = Metrics(known_model=gateway.router.known_model)
    metrics.watch_store(gateway.store, gateway.sql.dialect)
    return metrics


@hookimpl
def register_observers(register: RegisterObserver) -> None:
    register(make_metrics)
