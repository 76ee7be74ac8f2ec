"""The store: the only code that touches the database.

:class:`Store` runs domain functions — plain ``fn(conn, *args)`` from the
modules below — on reader threads or through the group-commit writer. The CLI
calls the same functions directly on a connection from :meth:`Store.connect`.
"""

from collections.abc import Sequence

from . import channel_health, channels, groups, keys, limits, prices, usage, users, wallet
from .connection import atomic
from .migrations import CORE_MIGRATIONS, apply_migrations
from .sqlite_store import Migration, Store



def open_store(url: str, migrations: Sequence[Migration]) -> Store:
    """The store for ``url``: a file path, or ``sqlite:///relative/path`` /
    ``sqlite:////absolute/path`` for the same."""
    return Store(url.removeprefix("sqlite:///"), migrations)


__all__ = [
    "CORE_MIGRATIONS",
    "Store",
    "apply_migrations",
    "atomic",
    "open_store",
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
