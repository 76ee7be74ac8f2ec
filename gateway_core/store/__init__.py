"""The store: the only code that touches the database.

:class:`Store` runs domain functions — plain ``fn(conn, *args)`` from the
modules below — on reader threads or through the group-commit writer. The CLI
calls the same functions directly on a connection from :meth:`Store.connect`.
"""

from . import channel_health, channels, groups, keys, limits, prices, usage, users, wallet
from .connection import atomic
from .migrations import CORE_MIGRATIONS, apply_migrations
from .sqlite_store import Store

__all__ = [
    "CORE_MIGRATIONS",
    "Store",
    "apply_migrations",
    "atomic",
    "channel_health",
    "channels",
    "groups",
    "keys",
    "limits",
    "prices",
    "usage",
    "users",
    "wallet",
]
