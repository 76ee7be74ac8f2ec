"""What ``serve`` asks of a database before it starts, on any store kind (migrating
and the start-up check are the kind's own: :class:`gateway_core.stores.StoreKind`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..stores import StoreKind
from ..sql import Migration


_LIMITED = "coalesce(rpm, 0) > 0 OR coalesce(tpm, 0) > 0 OR coalesce(concurrency, 0) > 0"
_LIMITS_SET = (
    f"SELECT 'key' AS subject, count(*) AS n FROM api_keys WHERE deleted = 0 AND ({_LIMITED}) "
    f"UNION ALL SELECT 'user', count(*) FROM users WHERE {_LIMITED} "
    f'''UNION ALL SELECT 'group', count(*) FROM "groups" WHERE {_LIMITED} '''
    "UNION ALL SELECT 'channel', count(*) FROM channels WHERE concurrency > 0"
)


async def configured_limits(kind: StoreKind, url: str, migrations: Sequence[Migration], *, timeout: float = 5.0) -> dict[str, int]:
    """How many keys (not deleted), users and groups of the database at ``url``
    have a rate or concurrency limit set, and how many channels a concurrency
    cap: ``{"key": 2, "user": 0, "group": 1, "channel": 0}``."""
    store = kind.open(url, migrations, pool_size=1, timeout=timeout)
    await store.start()
    try:
        rows = await kind.ports(store).sql.fetch_all(_LIMITS_SET)
    finally:
        await store.close()
    return {str(row["subject"]): int(row["n"]) for row in rows}
