"""``relaygate key create|list|edit|disable|enable|delete``."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..hookspecs import hookimpl
from ..records import KeyRecord
from . import limits
from .kit import CommandContext, parse_expires, split_list

if TYPE_CHECKING:
    from ..admin import Admin


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("key create", "create an API key (its secret is shown once)", _configure_key_create, _run_key_create)
    register("key list", "list a user's API keys", _configure_user_argument, _run_key_list)
    register("key edit", "change an API key's name, group, quota, expiry, models, allowed networks or limits", _configure_key_edit, _run_key_edit)
    register("key disable", "disable an API key", _configure_key_id, _run_key_disable)
    register("key enable", "enable an API key", _configure_key_id, _run_key_enable)
    register("key delete", "delete an API key", _configure_key_id, _run_key_delete)
    register("key cost-header", "whether a key's answers carry their cost (x-relaygate-cost-usd)", _configure_cost_header, _run_cost_header)


def _configure_key_create(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("--name", default="default", help="a label for the key (default 'default')")
    parser.add_argument("--group", help="one of the user's groups (default: 'default' if open, else the first)")
    parser.add_argument("--quota", metavar="USD", help="most the key may spend, in USD")
    parser.add_argument("--expires", metavar="ISO8601", help="expiry, e.g. 2026-12-31 or 2026-12-31T18:00:00+02:00 (UTC if no offset)")
    parser.add_argument("--models", default="", metavar="M1,M2", help="models allowed (default: every model of the group)")
    parser.add_argument("--allow-ip", action="append", default=[], metavar="CIDR,...", help="client addresses allowed (default: any)")
    limits.add_limit_options(parser)


def _run_key_create(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import keys, users
    from ..admin.rules import budget_micros

    quota = budget_micros(args.quota, "quota") if args.quota is not None else None  # the console's and the API's rule and words
    expires_at = parse_expires(args.expires) if args.expires is not None else None
    networks = [text for value in args.allow_ip for text in split_list(value)]
    rate_limits = limits.limit_changes(args)

    async def create(admin: Admin) -> tuple[KeyRecord, str]:
        user = await users.find_user(admin, args.user)
        key, secret = await keys.create_key(
            admin, user.id, name=args.name, group=args.group, quota_micros=quota, expires_at=expires_at,
            models=split_list(args.models), allow_ips=networks, limits=rate_limits,
        )  # fmt: skip
        await cli.audit(admin, "key.create", f"key {key.id}", None, key)
        return key, secret

    key, secret = cli.run(create)
    if cli.json:
        cli.print_record({"id": key.id, "key": secret})
        return 0
    print(f"Created API key {key.id} ({key.name!r}) for {key.user_name!r} in group {key.group!r}:")
    print(f"    {secret}")
    print("This key is shown only now: store it safely, it cannot be displayed again.")
    return 0


def _configure_user_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")


def _run_key_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import keys, users

    async def listed(admin: Admin) -> list[KeyRecord]:
        return await keys.list_keys(admin, (await users.find_user(admin, args.user)).id)

    columns = ["id", "name", "prefix", "group", "enabled", "quota_micros", "used_micros", "expires_at", "last_used_at"]
    cli.print_table(cli.run(listed), columns)
    return 0


def _configure_key_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int, metavar="ID")


def _configure_key_edit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int, metavar="ID")
    parser.add_argument("--name", help="a new label")
    parser.add_argument("--group", help="another of the user's groups")
    parser.add_argument("--quota", metavar="USD", help="most the key may spend, in USD ('none': no quota)")
    parser.add_argument("--expires", metavar="ISO8601", help="expiry, e.g. 2026-12-31 (UTC if no offset; 'never': none)")
    parser.add_argument("--models", metavar="M1,M2", help="models allowed ('all': every model of the group)")
    parser.add_argument("--allow-ip", metavar="CIDR,...", help="client addresses allowed ('any': no restriction)")
    limits.add_limit_options(parser)


def _run_key_edit(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import keys
    from ..admin.rules import budget_micros

    changes = limits.limit_changes(args)
    given = [args.name, args.group, args.quota, args.expires, args.models, args.allow_ip]
    if all(value is None for value in given) and not changes:
        raise ValueError("say what to change: --name, --group, --quota, --expires, --models, --allow-ip, --rpm, --tpm or --concurrency")
    quota = _cleared(args.quota, "none", lambda text: budget_micros(text, "quota"))
    expires_at = _cleared(args.expires, "never", parse_expires)
    models = _cleared(args.models, "all", split_list)
    networks = _cleared(args.allow_ip, "any", split_list)

    async def edit(admin: Admin) -> KeyRecord:
        before = await keys.get_key(admin, args.id)
        after = await keys.update_key(
            admin, args.id, name=before.name if args.name is None else args.name,
            quota_micros=before.quota_micros if quota is UNCHANGED else quota,
            expires_at=before.expires_at if expires_at is UNCHANGED else expires_at,
            models=before.models if models is UNCHANGED else (models or []),
            allow_ips=before.allow_ips if networks is UNCHANGED else (networks or []), group=args.group, limits=changes,
        )  # fmt: skip
        await cli.audit(admin, "key.update", f"key {args.id}", before, after)
        return after

    key = cli.run(edit)
    cli.print_record(key, text=f"API key {key.id} ({key.name!r}, {key.prefix}) of {key.user_name!r} changed.")
    return 0


UNCHANGED: Any = object()


def _cleared(text: str | None, clear_word: str, parse: Callable[[str], Any]) -> Any:
    """An option of ``key edit``: :data:`UNCHANGED` when not given, ``None`` for its
    clearing word (or an empty value), else its parsed value."""
    if text is None:
        return UNCHANGED
    if text.strip().lower() in (clear_word, ""):
        return None
    return parse(text)


def _run_key_disable(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import keys

    return _change_key(cli, args.id, "key.disable", lambda admin: keys.set_key_enabled(admin, args.id, False), "disabled")


def _run_key_enable(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import keys

    return _change_key(cli, args.id, "key.enable", lambda admin: keys.set_key_enabled(admin, args.id, True), "enabled")


def _run_key_delete(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import keys

    return _change_key(cli, args.id, "key.delete", lambda admin: keys.delete_key(admin, args.id), "deleted")


def _change_key(cli: CommandContext, key_id: int, action: str, change: Callable[[Admin], Awaitable[KeyRecord]], done: str) -> int:
    from ..admin import keys

    async def audited(admin: Admin) -> KeyRecord:
        before = await keys.get_key(admin, key_id)
        after = await change(admin)
        await cli.audit(admin, action, f"key {key_id}", before, after)
        return after

    key = cli.run(audited)
    cli.print_record(key, text=f"API key {key.id} ({key.name!r}, {key.prefix}) of {key.user_name!r} {done}.")
    return 0


def _configure_cost_header(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int, metavar="ID")
    parser.add_argument("state", choices=("on", "off"))


def _run_cost_header(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import keys

    done = "now carries" if args.state == "on" else "no longer carries"

    async def change(admin: Admin) -> KeyRecord:
        return await keys.set_key_cost_header(admin, args.id, args.state == "on")

    return _change_key(cli, args.id, "key.cost_header", change, f"{done} its cost in x-relaygate-cost-usd:")

