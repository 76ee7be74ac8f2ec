"""The admin layer: every operator and user operation, for every front.

The CLI, the console and the JSON management API are thin fronts over these
coroutines; none holds SQL or business rules of its own. Each operation takes
an :class:`Admin` (the store's admin port, the loaded channel types, the caches
to tell), validates, writes through the port (:mod:`.port`) and invalidates
the running gateway's caches. Modules by subject: :mod:`.users`, :mod:`.keys`,
:mod:`.channels`, :mod:`.groups`, :mod:`.prices`, :mod:`.wallet`,
:mod:`.usage`, :mod:`.setup`. Failures are :mod:`.errors`.

The names below are imported from their modules when first read, so a
``relaygate`` command module naming ``from gateway_core.admin import users``
loads the admin layer only as far as it uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import lazy

if TYPE_CHECKING:
    from .context import NO_CACHES, Admin, Caches
    from .errors import AdminError, Conflict, Forbidden, Invalid, Locked, NotFound, StoreFailure
    from .port import AdminStore

if not TYPE_CHECKING:  # mypy reads the imports above
    __getattr__ = lazy.loader(
        __name__,
        lazy.by_module({
            ".context": ("NO_CACHES", "Admin", "Caches"),
            ".errors": ("AdminError", "Conflict", "Forbidden", "Invalid", "Locked", "NotFound", "StoreFailure"),
            ".port": ("AdminStore",),
        }),
    )

__all__ = [
    "NO_CACHES",
    "Admin",
    "AdminError",
    "AdminStore",
    "Caches",
    "Conflict",
    "Forbidden",
    "Invalid",
    "Locked",
    "NotFound",
    "StoreFailure",
]
