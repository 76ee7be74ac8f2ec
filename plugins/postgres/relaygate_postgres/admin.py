"""The admin port (:class:`gateway_core.admin.port.AdminStore`) on PostgreSQL.

:class:`PostgresAdmin` gathers the parts in :mod:`.admin_users`,
:mod:`.admin_channels`, :mod:`.admin_money` and :mod:`.admin_codes`, each running on the pool of a
:class:`~.store.PostgresStore` (retried and timed as the request path's calls),
with the SQLite admin port's validation, records and errors: a taken name is
``Conflict``, a refused value ``Invalid``, a failing or unreachable database
``StoreFailure``.
"""

from __future__ import annotations

import asyncpg

from gateway_core.admin.errors import Conflict
from gateway_core.admin.port import ChannelFields
from gateway_core.records import DEFAULT_GROUP, InitResult, PriceRecord, UserRecord
from gateway_core.store.setup import ADMIN_NAME
from .access import AccessAdmin
from .admin_base import found
from .admin_channels import ChannelsAdmin, add_channel, set_price
from .admin_codes import CodesAdmin
from .admin_fallbacks import FallbacksAdmin
from .admin_money import MoneyAdmin
from .retention import PostgresRetention
from .admin_signups import SignupsAdmin
from .admin_teams import TeamsAdmin
from .admin_users import UsersAdmin, add_user, create_key, ensure_groups, get_user, list_keys, open_groups

_INIT_LOCK = 0x72656C6179  # the advisory lock one `relaygate init` at a time holds
_FIRST_ADMIN = "u.is_admin = 1 ORDER BY u.name != 'admin', u.id LIMIT 1"


class PostgresAdmin(UsersAdmin, TeamsAdmin, SignupsAdmin, ChannelsAdmin, MoneyAdmin, CodesAdmin, FallbacksAdmin, AccessAdmin, PostgresRetention):
    """The admin port of a running :class:`~.store.PostgresStore`."""

    async def initialize(self, *, admin_password_hash: str, first_channel: ChannelFields | None) -> InitResult:
        """As :func:`gateway_core.store.setup.initialize`, all or nothing in one
        transaction, one ``init`` at a time (an advisory lock)."""

        async def init(conn: asyncpg.Connection) -> InitResult:
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _INIT_LOCK)
            await ensure_groups(conn, [DEFAULT_GROUP])
            admin = await get_user(conn, _FIRST_ADMIN)
            admin_created = admin is None
            if admin is None:
                admin = await _create_admin(conn, admin_password_hash)
            channels = await _count_channels(conn)
            channel_created = first_channel is not None and channels == 0
            if first_channel is not None and channel_created:
                await add_channel(conn, first_channel)
                for model in first_channel.get("models", ()):
                    await set_price(conn, PriceRecord(model, 0, 0, free=True))
            key_id = secret = None
            if not await list_keys(conn, admin.id):
                if DEFAULT_GROUP not in admin.groups:
                    await open_groups(conn, admin.id, [DEFAULT_GROUP])
                key_id, secret = await create_key(conn, admin.id, name="demo", group=DEFAULT_GROUP)
            return InitResult(
                admin=admin, admin_created=admin_created, channel_created=channel_created, key_id=key_id, secret=secret,
                channels=await _count_channels(conn), admin_keys=len(await list_keys(conn, admin.id)),
            )  # fmt: skip

        return await self._write("initialize", init)


async def _create_admin(conn: asyncpg.Connection, password_hash: str) -> UserRecord:
    if await get_user(conn, "u.name = $1", ADMIN_NAME) is not None:
        raise Conflict(
            f"a user named {ADMIN_NAME!r} exists but is not an admin; create an admin with 'relaygate user add NAME --admin'"
        )
    user_id = await add_user(conn, ADMIN_NAME, is_admin=True, password_hash=password_hash, groups=[DEFAULT_GROUP])
    return found(await get_user(conn, "u.id = $1", user_id))


async def _count_channels(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM channels"))
