"""Setting up a new gateway (``relaygate init``): an admin, a first channel, a first key."""

from __future__ import annotations

import asyncio
import secrets

import attrs

from ..records import DEFAULT_GROUP, InitResult
from ..secrets import hash_password
from .context import Admin
from .errors import Invalid

DEMO_TYPE = "demo"
DEMO_MODEL = "demo-chat"


@attrs.frozen
class Setup:
    """What :func:`initialize` did; ``password`` is the new admin's console
    password (shown once), ``None`` when there was an admin already."""

    result: InitResult
    password: str | None = attrs.field(repr=False)


async def initialize(admin: Admin) -> Setup:
    """Create what is missing, all or nothing: the ``default`` group, an admin
    named ``admin`` with a random console password, a free demo channel (the
    ``demo`` channel type's) when there is no channel, a key for the admin when
    it has none. Running it again changes nothing."""
    demo = admin.channel_types.get(DEMO_TYPE)
    if demo is None and not await admin.store.list_channels():
        known = ", ".join(sorted(admin.channel_types)) or "none"
        raise Invalid(
            f"channel type {DEMO_TYPE!r} is not available (loaded channel types: {known}); "
            "install relaygate-demo or add \"demo\" to 'load' in plugins.toml"
        )
    password = secrets.token_urlsafe(12)
    first_channel = None
    if demo is not None:
        first_channel = {
            "name": "demo", "type": DEMO_TYPE, "base_url": demo.normalize_base_url("local://demo"),
            "models": [DEMO_MODEL], "groups": [DEFAULT_GROUP],
        }  # fmt: skip
    result = await admin.store.initialize(
        admin_password_hash=await asyncio.to_thread(hash_password, password), first_channel=first_channel
    )
    if result.channel_created:
        admin.caches.channels_changed()
        admin.caches.prices_changed()
    return Setup(result, password if result.admin_created else None)
