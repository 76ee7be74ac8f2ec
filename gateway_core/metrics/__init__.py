"""Prometheus metrics of the gateway: what is recorded (:mod:`.recorder`), what is
exported (:mod:`.families`), ``GET /metrics`` (:mod:`.endpoint`), and several
worker processes counted together (:mod:`.multiprocess`). See docs/operations.md."""

from .multiprocess import prepare_workers
from .recorder import Metrics

__all__ = ["Metrics", "prepare_workers"]
