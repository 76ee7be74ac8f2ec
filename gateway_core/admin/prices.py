"""Prices: what each model costs, in integer micro-USD."""

from __future__ import annotations

from ..records import PriceRecord
from .context import Admin
from .errors import Invalid, NotFound


async def set_price(admin: Admin, price: PriceRecord) -> PriceRecord:
    """Create or replace a model's price (non-negative integers of micro-USD); it as stored."""
    if not price.model.strip():
        raise Invalid("needs a model name", "model")
    stored = await admin.store.set_price(price)
    admin.caches.prices_changed()
    return stored


async def list_prices(admin: Admin) -> list[PriceRecord]:
    return await admin.store.list_prices()


async def delete_price(admin: Admin, model: str) -> None:
    if not await admin.store.delete_price(model):
        raise NotFound(f"no price for the model {model!r}")
    admin.caches.prices_changed()
