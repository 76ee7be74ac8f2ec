"""``relaygate price set|list|import``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ..hookspecs import hookimpl
from ..money import format_usd, parse_price_per_mtok, parse_usd
from ..records import PriceRecord
from .kit import CommandContext, CommandError, no_arguments, split_list

if TYPE_CHECKING:
    from ..admin import Admin


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("price set", "set a model's price per million tokens", _configure_price_set, _run_price_set)
    register("price list", "list what each model is charged: the operator's prices, and the catalogue's for served models not priced", no_arguments, _run_price_list)
    register("price import", "set prices from a price table file (LiteLLM's format, or relaygate's catalogue)", _configure_price_import, _run_price_import)


def _configure_price_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL")
    parser.add_argument("--input", metavar="USD_PER_MTOK", help="USD per million input tokens")
    parser.add_argument("--output", metavar="USD_PER_MTOK", help="USD per million output tokens")
    parser.add_argument("--cached-input", metavar="USD_PER_MTOK", help="USD per million cached input tokens")
    parser.add_argument("--cache-write", metavar="USD_PER_MTOK", help="USD per million tokens written to a cache")
    parser.add_argument("--per-image", metavar="USD", help="USD per image generated")
    parser.add_argument("--per-mchars", metavar="USD", help="USD per million characters (speech)")
    parser.add_argument("--per-audio-minute", metavar="USD", help="USD per minute of audio (transcription)")
    parser.add_argument("--cache-write-1h", metavar="USD_PER_MTOK", help="USD per million tokens written to a cache for an hour (default: --cache-write)")
    parser.add_argument("--reasoning", metavar="USD_PER_MTOK", help="USD per million reasoning tokens (default: the output price)")
    parser.add_argument("--per-request", metavar="USD", help="USD per request answered, on top of its tokens")
    parser.add_argument("--tier-above", type=int, metavar="TOKENS", help="a tier for requests of more input tokens than this (long context)")
    parser.add_argument("--tier-input", metavar="USD_PER_MTOK", help="the tier's USD per million input tokens")
    parser.add_argument("--tier-output", metavar="USD_PER_MTOK", help="the tier's USD per million output tokens (default: --output)")
    parser.add_argument("--free", action="store_true", help="the model costs nothing")


def _run_price_set(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import prices

    per_unit = {
        "per_image_micros": args.per_image, "per_mchar_micros": args.per_mchars,
        "per_audio_minute_micros": args.per_audio_minute,
    }  # fmt: skip
    per_unit = {name: parse_usd(text) for name, text in per_unit.items() if text is not None}
    if args.per_request is not None:
        per_unit["per_request_micros"] = parse_usd(args.per_request)
    if (args.tier_above is None) != (args.tier_input is None):
        raise ValueError("--tier-above and --tier-input go together")
    if not args.free and not per_unit and (args.input is None or args.output is None):
        raise ValueError("--input and --output are required (or --free, or a per-unit price such as --per-image)")
    wanted = PriceRecord(
        args.model,
        parse_price_per_mtok(args.input) if args.input is not None else 0,
        parse_price_per_mtok(args.output) if args.output is not None else 0,
        cached_input_micros_per_mtok=_optional_price(args.cached_input),
        cache_write_micros_per_mtok=_optional_price(args.cache_write),
        cache_write_1h_micros_per_mtok=_optional_price(args.cache_write_1h),
        reasoning_micros_per_mtok=_optional_price(args.reasoning),
        tier_threshold_tokens=args.tier_above,
        tier_input_micros_per_mtok=_optional_price(args.tier_input),
        tier_output_micros_per_mtok=_optional_price(args.tier_output),
        free=args.free, **per_unit,
    )  # fmt: skip
    async def set_price(admin: Admin) -> PriceRecord:
        before = next((price for price in await prices.list_prices(admin) if price.model == args.model), None)
        price = await prices.set_price(admin, wanted)
        await cli.audit(admin, "price.set", f"price {args.model}", before, price)
        return price

    price = cli.run(set_price)
    if price.free:
        text = f"{price.model}: free"
    else:
        text = (
            f"{price.model}: input {format_usd(price.input_micros_per_mtok)} USD, "
            f"output {format_usd(price.output_micros_per_mtok)} USD per million tokens"
        )
        if price.tier_threshold_tokens is not None:
            text += (f"; above {price.tier_threshold_tokens} input tokens: input {format_usd(price.tier_input_micros_per_mtok or 0)} USD"
                     f", output {format_usd(price.tier_output_micros_per_mtok or price.output_micros_per_mtok)} USD")  # fmt: skip
        for name, unit in (("per_image_micros", "image"), ("per_mchar_micros", "million characters"), ("per_audio_minute_micros", "minute of audio"), ("per_request_micros", "request")):
            if getattr(price, name) is not None:
                text += f"; {format_usd(getattr(price, name))} USD per {unit}"
    cli.print_record(price, text=text)
    return 0


def _run_price_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import prices

    columns = [
        "model", "input_micros_per_mtok", "output_micros_per_mtok", "cached_input_micros_per_mtok",
        "cache_write_micros_per_mtok", "per_image_micros", "per_mchar_micros", "per_audio_minute_micros", "free",
        "cache_write_1h_micros_per_mtok", "reasoning_micros_per_mtok", "per_request_micros", "tier_threshold_tokens",
        "tier_input_micros_per_mtok", "tier_output_micros_per_mtok", "source", "updated_at",
    ]  # fmt: skip
    cli.print_table(cli.run(prices.effective_prices), columns)
    return 0


def _configure_price_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a price table: LiteLLM's model_prices_and_context_window.json, or relaygate's catalogue format")
    parser.add_argument("--models", metavar="M1,M2", help="only these models (default: every token-priced model of the file)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be set, set nothing")


def _run_price_import(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import prices
    from ..billing.catalogue import CatalogueError, parse_catalogue, parse_litellm

    try:
        data = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CommandError(f"{args.file} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CommandError(f"{args.file}: a price table is a JSON object")
    try:
        if "models" in data and "checked" in data:
            found = [attrs.evolve(model.price, source="operator", updated_at=None) for model in parse_catalogue(data).models.values()]
            skipped: list[str] = []
        else:
            found, skipped = parse_litellm(data)
    except CatalogueError as exc:
        raise CommandError(f"{args.file}: {exc}") from None
    if args.models is not None:
        wanted = set(split_list(args.models))
        found = [price for price in found if price.model in wanted]
    if not args.dry_run:
        async def set_all(admin: Admin) -> None:
            for price in found:
                await prices.set_price(admin, price)
            await cli.audit(admin, "price.import", "prices", None, {"file": args.file, "models": [price.model for price in found]})

        cli.run(set_all)
    done = "would set" if args.dry_run else "set"
    cli.print_record(
        {"set": [price.model for price in found], "skipped": skipped, "dry_run": args.dry_run},
        text=f"{done} the price of {len(found)} model(s) from {args.file}" + (f"; {len(skipped)} entr(ies) without a token price left out" if skipped else ""),
    )
    return 0


def _optional_price(text: str | None) -> int | None:
    return parse_price_per_mtok(text) if text is not None else None
