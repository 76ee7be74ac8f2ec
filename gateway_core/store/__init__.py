"""The store: the only code that touches the database.

:class:`Store` runs domain functions — plain ``fn(conn, *args)`` from the
modules below — on reader threads or through the group-commit writer. The
request path sees it through its port (:class:`gateway_core.store.request_store.RequestStore`),
the admin layer through :class:`~.sqlite_admin.SqliteAdmin`, plugins' own
tables through :class:`~.sqlite_sql.SqliteSql`. The PostgreSQL plugin
(``plugins/postgres``) gives the same ports on a server.
Both are store kinds (:mod:`gateway_core.stores`); SQLite's is registered in :mod:`.kinds`.
Beside the SQLite store live the values the ports speak (``request_store``,
``access_records``, ``team_records``) and the rule for group names. It may import the
contract, ``base/`` (the retention settings live there), the billing arithmetic and the admin layer's port and
errors (which it implements); never the request path, routing, the runtime or a front.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import lazy

if TYPE_CHECKING:
    from . import channel_health, channels, groups, keys, limits, prices, usage, users, wallet
    from .connection import atomic
    from .migrations import CORE_MIGRATIONS, apply_migrations
    from .kinds import sqlite_path
    from .sqlite_store import Store
else:  # imported when first read: every relaygate command registers modules of this package, few open a database
    __getattr__ = lazy.loader(
        __name__,
        lazy.by_module({
            **{"." + name: (name,) for name in ("channel_health", "channels", "groups", "keys", "limits", "prices", "usage", "users", "wallet")},
            ".connection": ("atomic",),
            ".migrations": ("CORE_MIGRATIONS", "apply_migrations"),
            ".kinds": ("sqlite_path",),
            ".sqlite_store": ("Store",),
        }),
    )

__all__ = [
    "CORE_MIGRATIONS",
    "Store",
    "apply_migrations",
    "atomic",
    "sqlite_path",
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
