"""Model fallbacks: ``model → fallback`` for a group's keys or for one key, the
model that serves a request when every channel of the model asked for failed
before its first byte (see :mod:`gateway_core.routing.fallbacks`)."""

from __future__ import annotations

from ..store.request_store import ModelFallback
from .context import Admin
from .errors import Invalid, NotFound

GROUP, KEY = "group", "key"


def scope_of(group: str | None, key_id: int | None) -> tuple[str, str]:
    """``(scope, owner)`` for exactly one of a group's name and a key's id."""
    if (group is None) == (key_id is None):
        raise Invalid("name a group or a key (one of them)")
    if group is not None:
        if not group.strip():
            raise Invalid("must not be empty", "group")
        return GROUP, group.strip()
    return KEY, str(key_id)


async def set_fallback(admin: Admin, model: str, fallback: str, *, group: str | None = None, key_id: int | None = None) -> ModelFallback:
    """Make ``fallback`` serve ``model``'s requests of the group's keys (or the
    key's) when every channel of ``model`` failed before its first byte. A key's
    own fallback for a model wins over its group's. One hop: the fallback's own
    fallback is not followed."""
    scope, owner = scope_of(group, key_id)
    model, fallback = model.strip(), fallback.strip()
    if not model:
        raise Invalid("needs a name", "model")
    if not fallback:
        raise Invalid("needs a name", "fallback")
    if model == fallback:
        raise Invalid("must differ from the model it stands in for", "fallback")
    if scope == GROUP and owner not in {g.name for g in await admin.store.list_groups()}:
        raise NotFound(f"no group named {owner!r}")
    if scope == KEY and await admin.store.get_key(int(owner)) is None:
        raise NotFound(f"no key with id {owner}")
    record = await admin.store.set_fallback(scope, owner, model, fallback)
    admin.caches.channels_changed()  # the router keeps the fallbacks with its channel index
    return record


async def remove_fallback(admin: Admin, model: str, *, group: str | None = None, key_id: int | None = None) -> None:
    scope, owner = scope_of(group, key_id)
    if not await admin.store.delete_fallback(scope, owner, model.strip()):
        raise NotFound(f"no fallback for the model {model!r} on that {scope}")
    admin.caches.channels_changed()


async def list_fallbacks(admin: Admin) -> list[ModelFallback]:
    """Every fallback, groups' first, by owner then model."""
    return await admin.store.list_fallbacks()
