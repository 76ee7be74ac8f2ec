"""The core's schema as a plugin: its migrations (:mod:`.migrations`),
registered through ``register_migrations`` like a plugin's, and imported only
when something asks for them (a command that opens the database, an app)."""

from __future__ import annotations

from ..hookspecs import RegisterMigration, hookimpl


@hookimpl
def register_migrations(register: RegisterMigration) -> None:
    """The core's schema, registered through the same hook as a plugin's."""
    from .migrations import CORE_MIGRATIONS

    for name, migrate in CORE_MIGRATIONS:
        register(name, migrate)
