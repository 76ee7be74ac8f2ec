"""Billing: what a request costs, the price cache, and the reservation flow.

- :mod:`.cost` — the one function that turns metered usage and a price into
  integer micro-USD (the rounding rule lives there and nowhere else).
- :mod:`.charge` — what a finished request is charged, from its usage row.
- :mod:`.sweeper` — releases reservations a dead process left open.
- :mod:`.testing` — a test kit for billing.

The quota policy (:mod:`gateway_core.policies.quota`) reserves before the
upstream is called; the recorder (:mod:`gateway_core.request.recorder`) settles in the
same write as the usage row; :mod:`gateway_core.store.wallet` and
:mod:`gateway_core.store.audit` hold the SQL; ``relaygate wallet show``,
``logs`` and ``check`` live in :mod:`gateway_core.commands.billing`. See
``docs/billing.md``.
"""

from .cost import Metered, cost_micros, max_cost_micros

__all__ = ["Metered", "cost_micros", "max_cost_micros"]
