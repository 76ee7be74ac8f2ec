"""``relaygate init`` as one transaction: an admin, a first channel, a first key."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from ..admin.errors import Conflict
from ..records import DEFAULT_GROUP, InitResult
from .channels import add_channel, count_channels
from .connection import atomic
from .groups import ensure_groups
from .keys import create_key, list_keys
from .prices import set_price
from .users import add_user, first_admin, get_user, open_groups

ADMIN_NAME = "admin"


def initialize(
    conn: sqlite3.Connection, *, admin_password_hash: str, first_channel: Mapping[str, Any] | None
) -> InitResult:
    """Create what is missing, all or nothing (and one ``init`` at a time): the
    ``default`` group; an admin named ``admin`` with this password hash when
    there is no admin; ``first_channel`` (with its models free) when there is no
    channel; a key named ``demo`` when the admin has none."""
    with atomic(conn):
        ensure_groups(conn, [DEFAULT_GROUP])
        admin = first_admin(conn)
        admin_created = admin is None
        if admin is None:
            if get_user(conn, ADMIN_NAME) is not None:
                raise Conflict(
                    f"a user named {ADMIN_NAME!r} exists but is not an admin; "
                    "create an admin with 'relaygate user add NAME --admin'"
                )
            add_user(conn, ADMIN_NAME, is_admin=True, password_hash=admin_password_hash)
            admin = get_user(conn, ADMIN_NAME)
            assert admin is not None
        channel_created = first_channel is not None and count_channels(conn) == 0
        if first_channel is not None and channel_created:
            ensure_groups(conn, first_channel.get("groups", ()))
            add_channel(conn, **first_channel)
            for model in first_channel.get("models", ()):
                set_price(conn, model, 0, 0, free=True)
        key_id = secret = None
        if not list_keys(conn, admin.id):
            if DEFAULT_GROUP not in admin.groups:
                open_groups(conn, admin.id, [DEFAULT_GROUP])
            key_id, secret = create_key(conn, admin.id, name="demo", group=DEFAULT_GROUP)
        return InitResult(
            admin=admin, admin_created=admin_created, channel_created=channel_created, key_id=key_id, secret=secret,
            channels=count_channels(conn), admin_keys=len(list_keys(conn, admin.id)),
        )  # fmt: skip
