"""The model catalogue: list prices for the models a gateway is likely to serve.

``catalogue.json`` (beside this module) holds the providers' published prices in
USD per million tokens as decimal strings, with the date they were checked. A
model its operator has not priced is charged at its catalogue price
(``[gateway] price_catalogue``, on by default); an operator's price always wins.
The same reader takes LiteLLM's ``model_prices_and_context_window.json`` (prices
in USD per token) for ``relaygate price import``.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from importlib import resources
from typing import Any

import attrs

from ..money import parse_price_per_mtok
from ..records import PriceRecord
from ..store.request_store import PriceSnapshot

SOURCE = "catalogue"  # PriceRecord.source of a catalogue price ("operator": one set with relaygate price set)
# our catalogue's fields (USD per million tokens) and the price record's
FIELDS = {
    "input": "input_micros_per_mtok", "output": "output_micros_per_mtok", "cached_input": "cached_input_micros_per_mtok",
    "cache_write": "cache_write_micros_per_mtok", "cache_write_1h": "cache_write_1h_micros_per_mtok",
    "reasoning": "reasoning_micros_per_mtok", "tier_input": "tier_input_micros_per_mtok", "tier_output": "tier_output_micros_per_mtok",
}  # fmt: skip
# LiteLLM's fields (USD per token) and ours
LITELLM = {
    "input_cost_per_token": "input", "output_cost_per_token": "output", "cache_read_input_token_cost": "cached_input",
    "cache_creation_input_token_cost": "cache_write", "cache_creation_input_token_cost_above_1hr": "cache_write_1h",
    "output_cost_per_reasoning_token": "reasoning", "input_cost_per_token_above_200k_tokens": "tier_input",
    "output_cost_per_token_above_200k_tokens": "tier_output",
}  # fmt: skip


class CatalogueError(ValueError):
    """A price file that cannot be read: which entry, and why."""


@attrs.frozen
class CatalogueModel:
    """One model of the catalogue: its price and what it can take."""

    price: PriceRecord
    provider: str | None
    mode: str
    context_window: int | None
    max_output_tokens: int | None
    input_modalities: tuple[str, ...]
    reasoning: bool = False  # it can think (reason) before answering


@attrs.frozen
class Catalogue:
    checked: str  # the date the prices were checked, ISO 8601
    models: Mapping[str, CatalogueModel]

    def prices(self) -> dict[str, PriceRecord]:
        return {name: model.price for name, model in self.models.items()}


@functools.cache
def load_catalogue() -> Catalogue:
    """The catalogue shipped with the gateway (read once per process)."""
    text = resources.files("gateway_core.billing").joinpath("catalogue.json").read_text(encoding="utf-8")
    return parse_catalogue(json.loads(text))


def catalogue_model(name: str) -> CatalogueModel | None:
    """What the catalogue knows of the model ``name`` (``None``: nothing), for
    adapters that shape a request by what the upstream model can do."""
    return load_catalogue().models.get(name)


def parse_catalogue(data: Mapping[str, Any]) -> Catalogue:
    """Our catalogue format: ``{"checked": DATE, "models": {NAME: {"input": "2.5", …}}}``."""
    checked = str(data.get("checked") or "")
    updated_at = _timestamp(checked)
    models = {}
    for name, entry in (data.get("models") or {}).items():
        models[name] = CatalogueModel(
            price=price_of(name, entry, updated_at=updated_at), provider=entry.get("provider"), mode=str(entry.get("mode", "chat")),
            context_window=entry.get("context_window"), max_output_tokens=entry.get("max_output_tokens"),
            input_modalities=tuple(entry.get("input_modalities", ("text",))), reasoning=bool(entry.get("reasoning_model")),
        )  # fmt: skip
    return Catalogue(checked, models)


def price_of(model: str, entry: Mapping[str, Any], *, updated_at: float | None = None, source: str = SOURCE) -> PriceRecord:
    """One model's price from its catalogue entry (USD per million tokens as text)."""
    values: dict[str, Any] = {}
    for field, column in FIELDS.items():
        if entry.get(field) is not None:
            try:
                values[column] = parse_price_per_mtok(str(entry[field]))
            except ValueError as exc:
                raise CatalogueError(f"{model}: {field}: {exc}") from None
    if "input_micros_per_mtok" not in values or "output_micros_per_mtok" not in values:
        raise CatalogueError(f"{model}: needs an input and an output price")
    if entry.get("tier_threshold") is not None:
        values["tier_threshold_tokens"] = int(entry["tier_threshold"])
    return PriceRecord(model, updated_at=updated_at, source=source, **values)


def parse_litellm(data: Mapping[str, Any]) -> tuple[list[PriceRecord], list[str]]:
    """The token-priced models of a LiteLLM price table (USD per token) as prices
    set by the operator, and the names of the entries left out (no token price)."""
    prices, skipped = [], []
    for name, entry in data.items():
        if name == "sample_spec" or not isinstance(entry, Mapping):
            continue
        if entry.get("input_cost_per_token") is None or (entry.get("output_cost_per_token") is None and entry.get("mode") != "embedding"):
            skipped.append(name)
            continue
        ours: dict[str, Any] = {"output": "0"}
        for field, mine in LITELLM.items():
            if entry.get(field) is not None:
                ours[mine] = _per_mtok(name, field, entry[field])
        if "tier_input" in ours:
            ours["tier_threshold"] = 200_000
        prices.append(price_of(name, ours, source="operator"))
    return prices, skipped


def with_catalogue(read: Callable[[], Awaitable[PriceSnapshot]]) -> Callable[[], Awaitable[PriceSnapshot]]:
    """``read`` (the store's price snapshot) with the catalogue's prices beneath the operator's."""
    catalogue = load_catalogue().prices()

    async def snapshot() -> PriceSnapshot:
        stored = await read()
        return PriceSnapshot({**catalogue, **stored.prices}, stored.ratios)

    return snapshot


def _per_mtok(model: str, field: str, value: Any) -> str:
    """USD per token (a JSON number) as USD per million tokens, exactly."""
    try:
        per_mtok = Decimal(repr(value) if isinstance(value, float) else str(value)) * 1_000_000
    except InvalidOperation:
        raise CatalogueError(f"{model}: {field}: not a number: {value!r}") from None
    if per_mtok < 0 or not per_mtok.is_finite():
        raise CatalogueError(f"{model}: {field}: not a price: {value!r}")
    # finer than a micro-USD per million tokens: rounded up, as charges are
    return format(per_mtok.quantize(Decimal("0.000001"), rounding=ROUND_CEILING).normalize(), "f")


def _timestamp(day: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(day).replace(tzinfo=dt.timezone.utc).timestamp() if day else None
    except ValueError:
        raise CatalogueError(f"checked: not a date: {day!r}") from None
