"""Relaygate's PostgreSQL store: the request path's port, the admin port and plugins'
SQL handle on a server several replicas share, as a store kind (:mod:`.kind`,
registered by :mod:`.plugin` through ``register_stores``).

Importing the package imports nothing else: the plugin is loaded on every start,
asyncpg only when a ``postgresql://`` URL is used (:mod:`.store` and the rest).
"""
