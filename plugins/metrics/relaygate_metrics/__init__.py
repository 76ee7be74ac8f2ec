"""Relaygate's Prometheus metrics, a first-party plugin (:mod:`.plugin`): what is
recorded (:mod:`.recorder`, an observer of the request path), what is exported
(:mod:`.families`), ``GET /metrics`` (:mod:`.endpoint`), and several worker
processes counted together (:mod:`.multiprocess`). See docs/operations.md.

Importing the package imports none of them (every ``relaygate`` command loads the
plugin): each name is imported when first read, prometheus-client when an app
makes its metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway_core import lazy

if TYPE_CHECKING:
    from .multiprocess import prepare_workers
    from .recorder import Metrics

if not TYPE_CHECKING:  # mypy reads the imports above
    __getattr__ = lazy.loader(__name__, {"prepare_workers": ".multiprocess", "Metrics": ".recorder"})

__all__ = ["Metrics", "prepare_workers"]
