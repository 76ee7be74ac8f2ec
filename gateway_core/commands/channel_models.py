"""``relaygate channel models NAME [--fetch [--add] [--match PATTERN] [--key N]]``.

Without ``--fetch``: the models the channel serves. With it: the models the
channel's upstream offers (asked with the channel's key and timeouts, through
:mod:`gateway_core.admin.channel_models`, the operation the API and the console
use), each marked ``served`` or ``new`` (and ``no price`` when neither the operator
nor the catalogue prices it); ``--add`` then adds the new ones to the
channel's models (audited as ``channel.update``), ``--match`` keeps only ids
matching a shell-style pattern. A listing that fails prints why in one line and
exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..hookspecs import hookimpl
from ..records import ChannelRecord
from .kit import CommandContext

if TYPE_CHECKING:
    from ..admin import Admin
    from ..admin.channel_models import UpstreamModels


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("channel models", "a channel's models; --fetch lists its upstream's, --add adds them", _configure, _run)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--fetch", action="store_true", help="ask the channel's upstream which models it offers")
    parser.add_argument("--add", action="store_true", help="add the upstream's models the channel does not serve yet (implies --fetch)")
    parser.add_argument("--match", metavar="PATTERN", help="only ids matching this shell-style pattern, such as 'chat-*'")
    parser.add_argument("--key", type=int, metavar="N", help="the upstream key to ask with, by position from 0 (default: the first usable)")


def _run(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels, prices
    from ..admin.channel_models import add_models, channel_upstream_models
    from ..runtime.jsonable import to_jsonable

    if not (args.fetch or args.add):
        channel = cli.run(lambda admin: channels.find_channel(admin, args.name))
        if cli.json:
            cli.print_record({"channel": channel.name, "models": list(channel.models)})
        else:
            print("\n".join(channel.models))
        return 0

    async def fetch(admin: Admin) -> tuple[ChannelRecord, UpstreamModels, ChannelRecord | None]:
        found = await channels.find_channel(admin, args.name)
        channel, listed = await channel_upstream_models(
            admin, found.id, timeouts=cli.config.timeouts, request_id="cli-models", key_index=args.key, match=args.match
        )
        after = None
        if args.add and listed.ok and listed.new:
            before, after = await add_models(admin, channel.id, listed.new)
            await cli.audit(admin, "channel.update", f"channel {channel.id}", before, after)
        return channel, listed, after

    channel, listed, after = cli.run(fetch)
    if cli.json:
        cli.print_record({"channel": channel.name, **to_jsonable(listed), "added": list(listed.new) if after is not None else []})
        return 0 if listed.ok else 1
    if not listed.ok:
        print(f"{channel.name}: FAILED: {listed.message}")
        return 1
    key = f", key #{listed.key_index}" if listed.key_index is not None and channel.api_keys else ""
    print(f"{channel.name}: {listed.message} ({listed.latency_ms:g} ms{key})")
    width = max((len(model) for model in listed.models), default=0)
    new, unpriced = set(listed.new), set(listed.unpriced)
    for model in listed.models:
        print(f"  {model.ljust(width)}  {'new' if model in new else 'served'}{'  no price' if model in unpriced else ''}".rstrip())
    if after is not None:
        print(f"Added {len(listed.new)} to channel {channel.name!r}: it serves {len(after.models)} models now.")
    elif args.add:
        print(f"Nothing to add: channel {channel.name!r} serves every model listed.")
    warning = prices.unpriced_warning(model for model in listed.new if model in unpriced) if after is not None else None
    if warning:  # on stderr, as channel add says it
        print(f"warning: {warning}", file=sys.stderr)
    return 0
