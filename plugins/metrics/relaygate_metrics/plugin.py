"""The metrics as a plugin: an observer of every app (``register_observers``),
``GET /metrics`` (``register_routes``, :mod:`.endpoint`), and the folder several
worker processes add their metrics up in, made before they start
(``register_serve_setup``, :mod:`.multiprocess`). Loading it imports no
prometheus-client: an app imports it when it makes its metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway_core import hookimpl

if TYPE_CHECKING:
    from gateway_core.config import Config
    from gateway_core.gateway import Gateway
    from gateway_core.hookspecs import RegisterObserver, RegisterRoute, RegisterServeSetup

    from .recorder import Metrics


def make_metrics(gateway: Gateway) -> Metrics:
    """Models no channel serves are counted as ``other``; the store's write backlog
    and commit times are watched when it tells them."""
    from .recorder import Metrics  # here: every relaygate command loads this plugin, an app alone makes metrics

    metrics = Metrics(known_model=gateway.router.known_model)
    metrics.watch_store(gateway.store, gateway.sql.dialect)
    return metrics


def prepare_serving(workers: int, env: dict[str, str]) -> None:
    """Before ``serve`` starts its workers: with several, the folder they share
    (in every worker's environment)."""
    from .multiprocess import ENV, prepare_workers

    folder = prepare_workers(workers)  # before any worker starts (and before this process's own metrics)
    if folder:
        env[ENV] = folder


@hookimpl
def register_observers(register: RegisterObserver) -> None:
    register(make_metrics)


@hookimpl
def register_routes(register: RegisterRoute, config: Config) -> None:
    from starlette.routing import Route

    from .endpoint import MetricsEndpoint

    register(Route("/metrics", MetricsEndpoint(config), methods=["GET"]))


@hookimpl
def register_serve_setup(register: RegisterServeSetup) -> None:
    register(prepare_serving)
