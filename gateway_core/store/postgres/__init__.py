"""The PostgreSQL store: the request path's port on a server several replicas share.

Importing this package imports asyncpg; :func:`gateway_core.store.open_store`
imports it only for a ``postgresql://`` URL, so SQLite installations never do.
"""

from .migrate import PostgresSchema, SchemaOutdated, apply_migrations, pending
from .schema import CORE_MIGRATIONS, for_postgresql
from .store import PostgresStore

__all__ = ["CORE_MIGRATIONS", "PostgresSchema", "PostgresStore", "SchemaOutdated", "apply_migrations", "for_postgresql", "pending"]
