"""Prices: what each model costs, in integer micro-USD."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ..billing.cost import UNIT_RATIO_PPM
from ..records import PriceRecord
from .context import Admin
from .errors import Invalid, NotFound
from .users import get_user

_SCALED = (
    "input_micros_per_mtok", "output_micros_per_mtok", "cached_input_micros_per_mtok", "cache_write_micros_per_mtok",
    "cache_write_1h_micros_per_mtok", "reasoning_micros_per_mtok", "per_request_micros", "per_image_micros",
    "per_mchar_micros", "per_audio_minute_micros", "tier_input_micros_per_mtok", "tier_output_micros_per_mtok",
)  # fmt: skip


@attrs.frozen
class ModelPrice:
    """A model a user can call through one of their groups, and its price there
    (the group's ratio applied: what the user pays); ``price`` is ``None`` when the
    model has none (its requests are refused)."""

    model: str
    group: str
    ratio_ppm: int
    price: PriceRecord | None


async def set_price(admin: Admin, price: PriceRecord) -> PriceRecord:
    """Create or replace a model's price (non-negative integers of micro-USD); it as stored."""
    if not price.model.strip():
        raise Invalid("needs a model name", "model")
    stored = await admin.store.set_price(price)
    admin.caches.prices_changed()
    return stored


async def list_prices(admin: Admin) -> list[PriceRecord]:
    """The operator's prices (stored)."""
    return await admin.store.list_prices()


async def effective_prices(admin: Admin) -> list[PriceRecord]:
    """What each model is charged, by model: the operator's prices, and the
    catalogue's (``source="catalogue"``, ``updated_at`` the date it was checked) for
    the models some channel serves that the operator has not priced."""
    stored = {price.model: price for price in await admin.store.list_prices()}
    served = {model for channel in await admin.store.list_channels() for model in channel.models}
    fallback = {model: admin.catalogue[model] for model in served - set(stored) if model in admin.catalogue}
    return [price for _, price in sorted({**fallback, **stored}.items())]


async def unpriced_models(admin: Admin, models: Iterable[str]) -> list[str]:
    """Those of ``models`` with a price from neither the operator nor the catalogue
    (their requests would be refused: 403 ``model_not_priced``)."""
    stored = {price.model for price in await admin.store.list_prices()}
    return [model for model in dict.fromkeys(models) if model not in stored and model not in admin.catalogue]


def unpriced_warning(models: Iterable[str]) -> str | None:
    """What every front says of models with a price from neither the operator nor
    the catalogue (``None`` when there are none): their requests are refused."""
    names = list(dict.fromkeys(models))
    if not names:
        return None
    return (
        f"no price for {', '.join(names)}, from you or the catalogue: requests to them are refused "
        "(403 model_not_priced) until you set one (relaygate price set MODEL --input USD --output USD, or relaygate price import FILE)"
    )


async def delete_price(admin: Admin, model: str) -> None:
    if not await admin.store.delete_price(model):
        raise NotFound(f"no price for the model {model!r}")
    admin.caches.prices_changed()


async def models_for_user(admin: Admin, user_id: int) -> list[ModelPrice]:
    """The models the user's groups can use (served by an enabled channel of the
    group), each with its price after the group's ratio, by model then group."""
    user = await get_user(admin, user_id)
    ratios = {group.name: group.ratio_ppm for group in await admin.store.list_groups()}
    prices = {**admin.catalogue, **{price.model: price for price in await admin.store.list_prices()}}
    served = {
        (model, group)
        for channel in await admin.store.list_channels() if channel.enabled
        for group in channel.groups if group in user.groups
        for model in channel.models
    }  # fmt: skip
    listed = []
    for model, group in sorted(served):
        ratio = ratios.get(group, UNIT_RATIO_PPM)
        price = prices.get(model)
        listed.append(ModelPrice(model, group, ratio, None if price is None else _with_ratio(price, ratio)))
    return listed


def _with_ratio(price: PriceRecord, ratio_ppm: int) -> PriceRecord:
    """``price`` multiplied by a group ratio (rounded up to whole micro-USD, as charges are)."""
    if ratio_ppm == UNIT_RATIO_PPM or price.free:
        return price
    scaled = {name: -(-getattr(price, name) * ratio_ppm // UNIT_RATIO_PPM) for name in _SCALED if getattr(price, name) is not None}
    return attrs.evolve(price, **scaled)

