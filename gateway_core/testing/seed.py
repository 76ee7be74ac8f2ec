"""Test data put into a store through the admin port, on either store.

:class:`Seed` migrates the database its configuration names (a SQLite file or a
``postgresql://`` URL), opens the admin layer's port on it
(:func:`gateway_core.store.open_admin`'s store, on an event loop of its own in a
background thread, so that tests call it synchronously before and while a
gateway runs) and writes users, keys, channels, prices and money with the same
operations the CLI and the console use.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..admin.port import AdminStore
from ..config import Config
from ..runtime.plugins import collect
from ..records import AuditReport, PriceRecord
from ..store.request_store import RequestStore
from ..sql import SqlHandle
from ..store import Store

T = TypeVar("T")
USD = 1_000_000


class Seed:
    """Puts test data into the store of ``config`` (SQLite or PostgreSQL), through
    the admin port. Call :meth:`close` when done (the ``seed`` fixture does)."""

    def __init__(self, config: Config, *, extra_plugins: Iterable[Any] = ()) -> None:
        self.config = config
        self.registry = collect(config, extra_plugins)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="relaygate-seed", daemon=True)
        self._thread.start()
        self.kind = self.registry.store_kind(config.db_path)
        self.store: Any = self.kind.open(config.db_path, self.registry.migrations, pool_size=2, timeout=config.db_timeout)
        self._ports: tuple[AdminStore, SqlHandle] | None = None
        self._call(self._open)

    @property
    def sqlite(self) -> bool:
        """Whether the store is a SQLite file (``self.store.connect()`` then opens it)."""
        return isinstance(self.store, Store)

    async def _open(self) -> None:
        await self.kind.migrate(self.config.db_path, self.registry.migrations, timeout=self.config.db_timeout)
        store: RequestStore = self.store
        await store.start()
        ports = self.kind.ports(store)
        self._ports = ports.admin, ports.sql

    def _call(self, make: Callable[[], Awaitable[T]]) -> T:
        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def _admin(self, operation: Callable[[AdminStore], Awaitable[T]]) -> T:
        assert self._ports is not None, "the seed is closed"
        admin = self._ports[0]
        return self._call(lambda: operation(admin))

    def close(self) -> None:
        """Close the store and stop the seed's thread. Safe to call twice."""
        if self._loop.is_closed():
            return
        if self._ports is not None:
            self._ports = None
            self._call(self.store.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> Seed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the world ---------------------------------------------------------------------

    def user(self, name: str = "alice", *, groups: Sequence[str] = ("default",), balance_usd: int | None = None, admin: bool = False) -> int:
        user = self._admin(lambda port: port.create_user(name, is_admin=admin, password_hash=None, groups=tuple(groups)))
        if balance_usd:
            self.topup(user.id, balance_usd * USD, "test balance")
        return user.id

    def topup(self, user_id: int, amount_micros: int, note: str | None = None) -> int:
        """Credit a user (a ``topup`` ledger row); the new balance."""
        return self._admin(lambda port: port.topup(user_id, amount_micros, note))

    def adjust(self, user_id: int, amount_micros: int, note: str = "test adjustment") -> int:
        """Change a user's balance by a signed amount (an ``adjustment`` ledger row); the new balance."""
        return self._admin(lambda port: port.adjust(user_id, amount_micros, note))

    def key(self, user_id: int, *, name: str = "test", group: str = "default", **fields: Any) -> tuple[int, str]:
        """A new API key of the user's: ``(id, secret)``. ``fields``: ``quota_micros``,
        ``expires_at``, ``models``, ``allow_ips``, ``limits``."""
        values = {"quota_micros": None, "expires_at": None, "models": (), "allow_ips": (), "limits": {}, **fields}
        key, secret = self._admin(lambda port: port.create_key(user_id, name=name, group=group, **values))
        return key.id, secret

    def channel(
        self,
        name: str,
        *,
        type: str,
        base_url: str,
        models: Sequence[str],
        api_keys: Sequence[str] = ("sk-upstream-test",),
        groups: Sequence[str] = ("default",),
        model_map: dict[str, str] | None = None,
        priority: int = 0,
        weight: int = 1,
        free_unpriced: bool = True,
        **fields: Any,
    ) -> int:
        """Add a channel. Its models that have no price yet are marked free
        (``free_unpriced``), so tests about anything but billing need no prices:
        the gateway refuses unpriced models. Pass ``False`` to keep them unpriced;
        :meth:`price` afterwards replaces the free mark."""
        channel_type = self.registry.channel_type(type)
        if free_unpriced:
            priced = {price.model for price in self._admin(lambda port: port.list_prices())}
            for model in models:
                if model not in priced:
                    self.price(model, 0, 0, free=True)
        values = {
            "name": name, "type": type, "base_url": channel_type.normalize_base_url(base_url), "api_keys": tuple(api_keys),
            "models": tuple(models), "model_map": model_map or {}, "groups": tuple(groups), "priority": priority,
            "weight": weight, **fields,
        }  # fmt: skip
        return self._admin(lambda port: port.add_channel(values)).id

    def group(self, name: str, *, ratio_ppm: int | None = None, **limits: int | None) -> None:
        """Create or change a group: its price ratio (parts per million) and default limits."""
        self._admin(lambda port: port.set_group(name, ratio_ppm=ratio_ppm, limits=limits))

    def key_limits(self, key_id: int, **limits: int | None) -> None:
        """Set a key's own rate limits (``rpm``, ``tpm``, ``concurrency``)."""
        self._admin(lambda port: port.set_key_limits(key_id, limits))

    def price(self, model: str, input_micros_per_mtok: int, output_micros_per_mtok: int, **fields: Any) -> None:
        price = PriceRecord(model, input_micros_per_mtok, output_micros_per_mtok, **fields)
        self._admin(lambda port: port.set_price(price))

    def _write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """SQLite only: run the store's domain function ``fn(conn, *args)`` in a
        transaction on a connection of its own (for what the admin port does not offer)."""
        if not self.sqlite:
            raise TypeError("Seed._write runs SQLite domain functions: use the admin port's methods on PostgreSQL")
        conn = self.store.connect()
        try:
            with conn:
                return fn(conn, *args, **kwargs)
        finally:
            conn.close()

    # --- reading back --------------------------------------------------------------------------

    def check(self) -> AuditReport:
        """The money invariants (``relaygate check``) on the store."""
        return self._admin(lambda port: port.check_ledger())

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Read rows for assertions (tests only): ``?`` placeholders on either store."""
        if self.sqlite:
            conn = self.store.connect()
            try:
                cursor = conn.execute(sql, tuple(params))
                names = [d[0] for d in cursor.description or ()]
                return [dict(zip(names, row)) for row in cursor.fetchall()]
            finally:
                conn.close()
        assert self._ports is not None, "the seed is closed"
        handle = self._ports[1]
        return [dict(row) for row in self._call(lambda: handle.fetch_all(sql, params))]
