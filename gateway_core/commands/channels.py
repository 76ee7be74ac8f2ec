"""``relaygate channel add|list|edit|enable|disable|delete|test|types``.

Upstream keys are read from the command line (or ``--api-key-stdin``) and never
printed again: records show them masked, health shows them by position. A
running gateway sees a change within a second (its router's index lifetime).

- ``add NAME --type T --base-url URL --models M1,M2 [--api-key K …] [options]``;
  ``--fetch-models [--match PATTERN]`` asks the upstream first and serves the models
  it lists (after those of ``--models``, which it makes optional); a listing that
  fails or finds nothing adds no channel
- ``list``: every channel with its health (breaker per channel and per key,
  disabled keys and why)
- ``edit NAME [options]``: change what is given; ``--api-key`` replaces the keys,
  ``--setting NAME=VALUE`` sets one setting, ``--unset-setting NAME`` removes one
- ``enable NAME``: route to it again, and use its disabled keys again
- ``disable NAME`` / ``delete NAME``
- ``test NAME [--model M] [--key N]``: one small real request; status and latency
- ``types``: the loaded channel types, the endpoints each serves and its settings
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import endpoints
from ..channel_settings import CORE_SETTINGS, setting_text
from ..hookspecs import hookimpl
from ..records import DEFAULT_GROUP, ChannelRecord, DisabledKey
from .kit import CommandContext, CommandError, no_arguments, parse_model_map, split_list

if TYPE_CHECKING:
    from ..admin import Admin
    from ..admin.channel_models import UpstreamModels
    from ..routing.probe import ProbeResult


DEFAULT = "default"  # a timeout back to the gateway's [gateway.timeouts]
LIST_COLUMNS = ["id", "name", "type", "priority", "weight", "enabled", "health", "keys", "concurrency", "models", "groups"]


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("channel add", "add an upstream channel", _configure_add, _run_add)
    register("channel list", "list channels with their health (upstream keys masked)", no_arguments, _run_list)
    register("channel edit", "change a channel (--api-key replaces its upstream keys)", _configure_edit, _run_edit)
    register("channel enable", "route to a channel again and re-enable its disabled upstream keys", _configure_name, _run_enable)
    register("channel disable", "stop routing to a channel", _configure_name, _run_disable)
    register("channel delete", "delete a channel", _configure_name, _run_delete)
    register("channel test", "send one small real request through a channel: status and latency", _configure_test, _run_test)
    register("channel types", "list the loaded channel types: endpoints served and settings", no_arguments, _run_types)


# --- options shared by add and edit ---------------------------------------------------


def _channel_options(parser: argparse.ArgumentParser, *, adding: bool) -> None:
    parser.add_argument("--base-url", required=adding, metavar="URL")
    parser.add_argument("--api-key", action="append", default=[], metavar="KEY",
                        help="upstream key (repeat or comma-separate for several)" + ("" if adding else "; replaces the channel's keys"))  # fmt: skip
    parser.add_argument("--api-key-stdin", action="store_true", help="read upstream keys from stdin, one a line (kept out of the shell history)")
    parser.add_argument("--models", metavar="M1,M2", help="the models clients ask for" + (" (required unless --fetch-models)" if adding else ""))
    parser.add_argument("--groups", default=DEFAULT_GROUP if adding else None, metavar="G1,G2")
    parser.add_argument("--priority", default="0" if adding else None, metavar="N", help="higher is tried first" + (" (default 0)" if adding else ""))
    parser.add_argument("--weight", default="1" if adding else None, metavar="N", help="share among equal priorities" + (" (default 1)" if adding else ""))
    parser.add_argument("--model-map", default="" if adding else None, metavar="CLIENT=UPSTREAM,...")
    parser.add_argument("--endpoints", metavar="E1,E2", help=f"endpoints served (default: all the type serves): {', '.join(endpoints.ALL)}")
    parser.add_argument("--header", action="append", default=[], metavar="NAME=VALUE", help="extra header sent upstream (repeat)")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the channel's type (repeat; 'relaygate channel types' lists them)")  # fmt: skip
    if not adding:
        parser.add_argument("--unset-setting", action="append", default=[], metavar="NAME", help="remove a setting: back to its default (repeat)")
    parser.add_argument("--concurrency", metavar="N", help="requests in flight at once, per worker (across every worker and replica with Redis; 0: no cap)")
    for name, what in (("connect", "connecting"), ("first-byte", "the response head"), ("idle", "silence between chunks")):
        parser.add_argument(f"--timeout-{name}", type=_timeout, metavar="S", help=f"seconds for {what} ('{DEFAULT}': the gateway's)")


TIMEOUT_FIELDS = ("timeout_connect", "timeout_first_byte", "timeout_idle")


def _fields(args: argparse.Namespace, existing: ChannelRecord | None) -> dict[str, Any]:
    """The channel fields the options give (validated by :mod:`gateway_core.admin.channels`)."""
    from ..admin import channels
    from ..admin.rules import check_channel_number, parse_channel_number

    fields: dict[str, Any] = {}
    if existing is None:
        fields["type"] = args.type
    if args.base_url is not None:
        fields["base_url"] = args.base_url
    keys = [key for value in args.api_key for key in split_list(value)]
    if args.api_key and not keys:  # --api-key "$UNSET_VARIABLE": a channel that would fail every request
        raise ValueError("--api-key is empty (is the shell variable set?): give the upstream key, or leave --api-key out for a channel that needs none")
    if args.api_key_stdin:
        keys += [line.strip() for line in sys.stdin.read().splitlines() if line.strip()]
        if not keys:
            raise ValueError("--api-key-stdin: no key on stdin")
    if keys or existing is None:
        fields["api_keys"] = keys
    for name in ("models", "groups", "endpoints"):
        if getattr(args, name) is not None:
            fields[name] = split_list(getattr(args, name))
    for name in ("priority", "weight", "concurrency"):  # the admin layer's rule and words, as the console's and the API's
        if (text := getattr(args, name)) is not None:  # '' is refused, not a default
            fields[name] = parse_channel_number(text, name) if text.strip() else check_channel_number(text, name)
    if args.model_map is not None:
        fields["model_map"] = parse_model_map(args.model_map)
    if args.header:
        fields["headers"] = {**(existing.headers if existing else {}), **_pairs("--header", args.header)}
    if existing is None:
        fields["settings"] = _pairs("--setting", args.setting)
    elif args.setting or args.unset_setting:
        fields["settings"] = channels.changed_settings(existing.settings, _pairs("--setting", args.setting), args.unset_setting)
    for name in TIMEOUT_FIELDS:
        value = getattr(args, name)
        if value is not None:
            fields[name] = None if value == DEFAULT else value
    return fields


# --- add, list, edit ------------------------------------------------------------------------


def _configure_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--type", required=True, help="a channel type from the loaded plugins")
    _channel_options(parser, adding=True)
    parser.add_argument("--disabled", action="store_true", help="add it disabled (enable it after a test)")
    parser.add_argument("--fetch-models", action="store_true",
                        help="ask the upstream (with the key given) which models it offers and serve them, after those of --models")  # fmt: skip
    parser.add_argument("--match", metavar="PATTERN", help="with --fetch-models: only ids matching this shell-style pattern, such as 'chat-*'")


def _run_add(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels, prices
    from ..admin.channel_models import add_channel_with_upstream_models

    if args.models is None and not args.fetch_models:
        raise ValueError("--models is required (the models clients ask for), or --fetch-models to serve those the upstream lists")
    if args.match is not None and not args.fetch_models:
        raise ValueError("--match goes with --fetch-models")
    fields = {"name": args.name, **_fields(args, None), "enabled": not args.disabled}

    async def add(admin: Admin) -> tuple[ChannelRecord | None, UpstreamModels | None, str | None]:
        listed = None
        if args.fetch_models:
            channel, listed = await add_channel_with_upstream_models(admin, fields, timeouts=cli.config.timeouts, request_id="cli-add", match=args.match)
            if channel is None:
                return None, listed, None
        else:
            channel = await channels.add_channel(admin, fields)
        await cli.audit(admin, "channel.create", f"channel {channel.id}", None, channel)
        warning = listed.warning if listed is not None else prices.unpriced_warning(await prices.unpriced_models(admin, channel.models))
        return channel, listed, warning

    channel, listed, warning = cli.run(add)
    if channel is None:
        message = listed.message if listed is not None else "no listing"
        raise CommandError(f"the upstream's models could not be fetched, so no channel was added: {message}")
    if listed is not None and not cli.json:  # the models as `channel models --fetch` shows them
        print(f"{channel.name}: {listed.message} ({listed.latency_ms:g} ms)")
        width, unpriced = max((len(model) for model in listed.models), default=0), set(listed.unpriced)
        print("".join(f"  {model.ljust(width)}  served{'  no price' if model in unpriced else ''}\n" for model in listed.models), end="")
    if warning:  # on stderr: --json's record stays the channel
        print(f"warning: {warning}", file=sys.stderr)
    text = f"Added channel {channel.name!r} (id {channel.id}, type {channel.type}, {len(channel.api_keys)} upstream key(s)) at {channel.base_url}"
    cli.print_record(channel, text=text + (" (disabled)" if args.disabled else ""))
    return 0


def _run_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels
    from ..routing.health_report import key_summary
    from ..runtime.jsonable import to_jsonable

    rows = []
    for status in cli.run(channels.channel_statuses):
        row = {**to_jsonable(status.channel), "health": status.health}
        if not cli.json:
            row["health"] = status.health["summary"]
            row["keys"] = "; ".join(key_summary(key) for key in status.health["keys"]) or "-"
        rows.append(row)
    cli.print_table(rows, LIST_COLUMNS)
    return 0


def _configure_edit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--rename", metavar="NEW_NAME", help="a new name")
    _channel_options(parser, adding=False)


def _run_edit(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels

    async def edit(admin: Admin) -> tuple[ChannelRecord, dict[str, Any]]:
        existing = await channels.find_channel(admin, args.name)
        fields = _fields(args, existing)
        if args.rename is not None:
            fields["name"] = args.rename
        channel = await channels.update_channel(admin, existing.id, fields)
        await cli.audit(admin, "channel.update", f"channel {channel.id}", existing, channel)
        return channel, fields

    channel, fields = cli.run(edit)
    changed = ", ".join(name.replace("_", " ") for name in fields)
    cli.print_record(channel, text=f"Changed channel {channel.name!r}: {changed}.")
    return 0


# --- enable, disable, delete, test --------------------------------------------------------------


def _configure_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")


def _run_enable(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels

    async def enable(admin: Admin) -> tuple[ChannelRecord, list[DisabledKey]]:
        before = await channels.find_channel(admin, args.name)
        after, restored = await channels.enable_channel(admin, before.id)
        await cli.audit(admin, "channel.enable", f"channel {before.id}", before, after)
        return after, restored

    channel, restored = cli.run(enable)
    text = f"Enabled channel {channel.name!r}."
    if restored:
        text += " Upstream key(s) in use again: " + "; ".join(f"#{d.index} (disabled: {d.reason[:80]})" for d in restored) + "."
    cli.print_record(channel, text=text)
    return 0


def _run_disable(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels

    async def disable(admin: Admin) -> ChannelRecord:
        before = await channels.find_channel(admin, args.name)
        after = await channels.disable_channel(admin, before.id)
        await cli.audit(admin, "channel.disable", f"channel {before.id}", before, after)
        return after

    cli.print_record(cli.run(disable), text=f"Disabled channel {args.name!r}.")
    return 0


def _run_delete(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels

    async def delete(admin: Admin) -> ChannelRecord:
        before = await channels.delete_channel(admin, (await channels.find_channel(admin, args.name)).id)
        await cli.audit(admin, "channel.delete", f"channel {before.id}", before, None)
        return before

    channel = cli.run(delete)
    cli.print_record({"id": channel.id, "name": channel.name, "deleted": True}, text=f"Deleted channel {channel.name!r} (id {channel.id}).")
    return 0


def _configure_test(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--model", help="the model to ask (default: the channel's first)")
    parser.add_argument("--key", type=int, metavar="N", help="the upstream key to use, by position from 0 (default: the first usable)")


def _run_test(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels
    from ..runtime.jsonable import to_jsonable

    async def test(admin: Admin) -> tuple[ChannelRecord, ProbeResult]:
        channel = await channels.find_channel(admin, args.name)
        return await channels.test_channel(
            admin, channel.id, timeouts=cli.config.timeouts, request_id="cli-test", model=args.model, key_index=args.key
        )

    channel, result = cli.run(test)
    record = {"channel": channel.name, **to_jsonable(result)}
    verdict = "OK" if result.ok else "FAILED"
    status = f"HTTP {result.status}" if result.status else "no HTTP answer"
    key = f", key #{result.key_index}" if result.key_index is not None and channel.api_keys else ""
    text = f"{channel.name}: {verdict}, {status} in {result.latency_ms:g} ms (model {result.model or '-'}{key}). {result.message}"
    cli.print_record(record, text=text)
    return 0 if result.ok else 1


def _run_types(args: argparse.Namespace, cli: CommandContext) -> int:
    """The loaded channel types: what each serves and the settings it declares."""
    from ..runtime.jsonable import to_jsonable

    loaded = sorted(cli.registry.channel_types.items())
    served = {name: [e for e in endpoints.ALL if channel_type.wire(e)] for name, channel_type in loaded}
    if cli.json:
        cli.print_record([{"name": name, "endpoints": served[name], "settings": [
            {**to_jsonable(s), "accepts": s.accepts} for s in channel_type.settings]} for name, channel_type in loaded])  # fmt: skip
        return 0
    for name, channel_type in loaded:
        print(f"{name}: {', '.join(served[name]) or 'no endpoint'}")
        width = max((len(s.name) for s in channel_type.settings), default=0)
        for s in channel_type.settings:
            default = "not set" if s.default is None else setting_text(s.default)
            print(f"  {s.name.ljust(width)}  {s.accepts} (default: {default}). {s.help}".rstrip())
        if not channel_type.settings:
            print("  (no settings)")
    print("every type:")
    for s in CORE_SETTINGS:
        print(f"  {s.name}  {s.accepts} (default: {setting_text(s.default)}). {s.help}")
    return 0


# --- helpers ----------------------------------------------------------------------------------


def _timeout(text: str) -> float | str:
    if text == DEFAULT:
        return DEFAULT
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (like 30 or 2.5) or '{DEFAULT}', got {text!r}") from None


def _pairs(option: str, values: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` options (``--header``, ``--setting``) as a mapping; the value
    is not shown in an error (a header's may be a secret)."""
    pairs: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{option} looks like NAME=VALUE, got {value.split('=')[0]!r}…")
        pairs[name.strip()] = text.strip()
    return pairs

