"""Prometheus metrics of the gateway: what is recorded (:mod:`.recorder`), what is
exported (:mod:`.families`), ``GET /metrics`` (:mod:`.endpoint`), and several
worker processes counted together (:mod:`.multiprocess`). See docs/operations.md.

Importing the package imports none of them (every ``relaygate`` command loads the
metrics' plugin, :mod:`.plugin`): each name is imported when first read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime import lazy

if TYPE_CHECKING:
    from .multiprocess import prepare_workers
    from .recorder import Metrics

if not TYPE_CHECKING:  # mypy reads the imports above
    __getattr__ = lazy.loader(__name__, {"prepare_workers": ".multiprocess", "Metrics": ".recorder"})

__all__ = ["Metrics", "prepare_workers"]
