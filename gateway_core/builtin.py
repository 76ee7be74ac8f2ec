"""The core's own plugin: built-in policies, migrations and commands,
registered through the same hooks as any third-party plugin."""

from __future__ import annotations

import argparse
import secrets as random
import sys
from collections.abc import Callable
from typing import Any

from . import commands
from .cli import EXIT_USAGE, CommandContext, CommandError, parse_expires, require_user, split_list
from .hookspecs import hookimpl
from .money import format_usd, parse_price_per_mtok, parse_usd
from .records import KeyRecord
from .secrets import hash_password
from .store import atomic, channels, keys, prices, users, wallet
from .store.groups import ensure_groups
from .store.migrations import CORE_MIGRATIONS, DEFAULT_GROUP

DEMO_TYPE = "demo"
DEMO_MODEL = "demo-chat"


@hookimpl
def register_policies(register: Callable[[Any], None], config: Any) -> None:
    from .policies import builtin_policies

    for policy in builtin_policies(config):
        register(policy)


@hookimpl
def register_migrations(register: Callable[[str, Callable[[Any], None]], None]) -> None:
    for name, migrate in CORE_MIGRATIONS:
        register(name, migrate)


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("serve", "run the gateway", _configure_serve, _run_serve)
    register("init", "create the database, an admin, a demo channel and key (idempotent)", _configure_init, _run_init)
    register("user add", "create a user", _configure_user_add, _run_user_add)
    register("user list", "list users", _no_arguments, _run_user_list)
    register("wallet topup", "credit a user's balance", _configure_wallet_topup, _run_wallet_topup)
    register("price set", "set a model's price per million tokens", _configure_price_set, _run_price_set)
    register("price list", "list model prices", _no_arguments, _run_price_list)
    register("key create", "create an API key (its secret is shown once)", _configure_key_create, _run_key_create)
    register("key list", "list a user's API keys", _configure_user_argument, _run_key_list)
    register("key disable", "disable an API key", _configure_key_id, _run_key_disable)
    register("key enable", "enable an API key", _configure_key_id, _run_key_enable)
    register("key delete", "delete an API key", _configure_key_id, _run_key_delete)
    register("plugins", "list the loaded plugins", _no_arguments, _run_plugins)
    commands.channels.register(register)
    commands.limits.register(register)
    commands.billing.register(register)


# --- serve and init -----------------------------------------------------------------


def _configure_serve(parser: argparse.ArgumentParser) -> None:
    _address_options(parser)
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default 1)")


def _run_serve(args: argparse.Namespace, cli: CommandContext) -> int:
    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    try:
        from .server import serve
    except ImportError as exc:
        raise CommandError(f"the server is not available: {exc}") from None
    return int(serve(cli.config, host=args.host, port=args.port, workers=args.workers) or 0)


def _configure_init(parser: argparse.ArgumentParser) -> None:
    _address_options(parser)


def _run_init(args: argparse.Namespace, cli: CommandContext) -> int:
    conn = cli.connect()
    demo = cli.registry.channel_types.get(DEMO_TYPE)
    password = secret = None
    key_id = None
    channel_created = False
    with atomic(conn):  # all or nothing, and one init at a time
        ensure_groups(conn, [DEFAULT_GROUP])
        admin = users.first_admin(conn)
        if admin is None:
            if users.get_user(conn, "admin") is not None:
                raise CommandError("a user named 'admin' exists but is not an admin; create an admin with 'relaygate user add NAME --admin'")
            password = random.token_urlsafe(12)
            users.add_user(conn, "admin", is_admin=True, password_hash=hash_password(password))
            admin = users.get_user(conn, "admin")
        if channels.count_channels(conn) == 0:
            if demo is None:
                known = ", ".join(sorted(cli.registry.channel_types)) or "none"
                raise CommandError(
                    f"channel type {DEMO_TYPE!r} is not available (loaded channel types: {known}); "
                    "install relaygate-demo or add \"demo\" to 'load' in plugins.toml",
                    EXIT_USAGE,
                )
            channels.add_channel(
                conn, name="demo", type=DEMO_TYPE, base_url=demo.normalize_base_url("local://demo"),
                models=[DEMO_MODEL], groups=[DEFAULT_GROUP],
            )  # fmt: skip
            prices.set_price(conn, DEMO_MODEL, 0, 0, free=True)
            channel_created = True
        if not keys.list_keys(conn, admin.id):
            if DEFAULT_GROUP not in admin.groups:
                users.open_groups(conn, admin.id, [DEFAULT_GROUP])
            key_id, secret = keys.create_key(conn, admin.id, name="demo", group=DEFAULT_GROUP)
        channel_count = channels.count_channels(conn)
        key_count = len(keys.list_keys(conn, admin.id))
    base = f"http://{_host_for_url(args.host)}:{args.port}"
    if cli.json:
        cli.print_record({
            "gateway_url": f"{base}/v1", "console_url": f"{base}/console/", "admin": admin.name,
            "admin_password": password, "channel_created": channel_created, "key_id": key_id, "key": secret,
        })  # fmt: skip
        return 0
    if password is None and not channel_created and secret is None:
        print(f"Already initialized: admin user {admin.name!r}, {channel_count} channel(s), {key_count} API key(s) for {admin.name}.")
        print(f"Create another key with: relaygate key create {admin.name} --name NAME")
    if password is not None:
        print(f"Created admin user 'admin'. Console password (shown only now): {password}")
    if channel_created:
        print(f"Created channel 'demo' (type {DEMO_TYPE}) serving the free model {DEMO_MODEL!r}.")
    if secret is not None:
        print(f"Created API key 'demo' for {admin.name}:")
        print(f"    {secret}")
        print("WARNING: this key is shown only now. Store it safely; it cannot be displayed again.")
    print(f"Gateway: {base}/v1")
    print(f"Console: {base}/console/")
    return 0


def _address_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


# --- users and wallets -----------------------------------------------------------------


def _configure_user_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--admin", action="store_true", help="an operator of the gateway")
    parser.add_argument("--password-stdin", action="store_true", help="read a console password from stdin")
    parser.add_argument("--groups", default=DEFAULT_GROUP, metavar="G1,G2", help="groups opened to the user")


def _run_user_add(args: argparse.Namespace, cli: CommandContext) -> int:
    groups = split_list(args.groups)
    if not groups:
        raise ValueError("--groups needs at least one group")
    password_hash = None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise ValueError("--password-stdin: no password on stdin")
        password_hash = hash_password(password)
    conn = cli.connect()
    if users.get_user(conn, args.name) is not None:
        raise CommandError(f"user {args.name!r} already exists")
    users.add_user(conn, args.name, is_admin=args.admin, password_hash=password_hash, groups=groups)
    user = users.get_user(conn, args.name)
    role = "admin" if user.is_admin else "user"
    cli.print_record(user, text=f"Created {role} {user.name!r} (id {user.id}) with groups: {', '.join(user.groups)}")
    return 0


def _run_user_list(args: argparse.Namespace, cli: CommandContext) -> int:
    cli.print_table(users.list_users(cli.connect()), ["id", "name", "is_admin", "enabled", "balance_micros", "groups"])
    return 0


def _configure_wallet_topup(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("amount", metavar="AMOUNT", help="USD, a decimal like 10 or 2.50")
    parser.add_argument("--note", help="why (kept in the ledger)")


def _run_wallet_topup(args: argparse.Namespace, cli: CommandContext) -> int:
    amount = parse_usd(args.amount)
    if amount <= 0:
        raise ValueError(f"a top-up must be more than zero, got {args.amount!r}")
    conn = cli.connect()
    user = require_user(conn, args.user)
    balance = wallet.topup(conn, user.id, amount, args.note)
    record = {"user": user.name, "user_id": user.id, "amount_micros": amount, "balance_micros": balance}
    text = f"Added {format_usd(amount)} USD to {user.name!r}; balance is now {format_usd(balance)} USD."
    cli.print_record(record, text=text)
    return 0


# --- prices ------------------------------------------------------------------------------


def _configure_price_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL")
    parser.add_argument("--input", metavar="USD_PER_MTOK", help="USD per million input tokens")
    parser.add_argument("--output", metavar="USD_PER_MTOK", help="USD per million output tokens")
    parser.add_argument("--cached-input", metavar="USD_PER_MTOK", help="USD per million cached input tokens")
    parser.add_argument("--cache-write", metavar="USD_PER_MTOK", help="USD per million tokens written to a cache")
    parser.add_argument("--per-image", metavar="USD", help="USD per image generated")
    parser.add_argument("--per-mchars", metavar="USD", help="USD per million characters (speech)")
    parser.add_argument("--per-audio-minute", metavar="USD", help="USD per minute of audio (transcription)")
    parser.add_argument("--free", action="store_true", help="the model costs nothing")


def _run_price_set(args: argparse.Namespace, cli: CommandContext) -> int:
    per_unit = {
        "per_image_micros": args.per_image, "per_mchar_micros": args.per_mchars,
        "per_audio_minute_micros": args.per_audio_minute,
    }  # fmt: skip
    per_unit = {name: parse_usd(text) for name, text in per_unit.items() if text is not None}
    if not args.free and not per_unit and (args.input is None or args.output is None):
        raise ValueError("--input and --output are required (or --free, or a per-unit price such as --per-image)")
    price = prices.set_price(
        cli.connect(), args.model,
        parse_price_per_mtok(args.input) if args.input is not None else 0,
        parse_price_per_mtok(args.output) if args.output is not None else 0,
        cached_input_micros_per_mtok=_optional_price(args.cached_input),
        cache_write_micros_per_mtok=_optional_price(args.cache_write),
        free=args.free, **per_unit,
    )  # fmt: skip
    if price.free:
        text = f"{price.model}: free"
    else:
        text = (
            f"{price.model}: input {format_usd(price.input_micros_per_mtok)} USD, "
            f"output {format_usd(price.output_micros_per_mtok)} USD per million tokens"
        )
        for name, unit in (("per_image_micros", "image"), ("per_mchar_micros", "million characters"), ("per_audio_minute_micros", "minute of audio")):
            if getattr(price, name) is not None:
                text += f"; {format_usd(getattr(price, name))} USD per {unit}"
    cli.print_record(price, text=text)
    return 0


def _run_price_list(args: argparse.Namespace, cli: CommandContext) -> int:
    columns = [
        "model", "input_micros_per_mtok", "output_micros_per_mtok", "cached_input_micros_per_mtok",
        "cache_write_micros_per_mtok", "per_image_micros", "per_mchar_micros", "per_audio_minute_micros", "free",
    ]  # fmt: skip
    cli.print_table(prices.list_prices(cli.connect()), columns)
    return 0


def _optional_price(text: str | None) -> int | None:
    return parse_price_per_mtok(text) if text is not None else None


# --- API keys ----------------------------------------------------------------------------


def _configure_key_create(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")
    parser.add_argument("--name", default="default", help="a label for the key (default 'default')")
    parser.add_argument("--group", help="one of the user's groups (default: 'default' if open, else the first)")
    parser.add_argument("--quota", metavar="USD", help="most the key may spend, in USD")
    parser.add_argument("--expires", metavar="ISO8601", help="expiry, e.g. 2026-12-31 or 2026-12-31T18:00:00+02:00 (UTC if no offset)")
    parser.add_argument("--models", default="", metavar="M1,M2", help="models allowed (default: every model of the group)")
    parser.add_argument("--allow-ip", action="append", default=[], metavar="CIDR,...", help="client addresses allowed (default: any)")
    commands.limits.add_limit_options(parser)


def _run_key_create(args: argparse.Namespace, cli: CommandContext) -> int:
    quota = parse_usd(args.quota) if args.quota is not None else None
    expires_at = parse_expires(args.expires) if args.expires is not None else None
    networks = [keys.normalize_network(text) for value in args.allow_ip for text in split_list(value)]
    conn = cli.connect()
    user = require_user(conn, args.user)
    group = args.group or (DEFAULT_GROUP if DEFAULT_GROUP in user.groups or not user.groups else user.groups[0])
    key_id, secret = keys.create_key(
        conn, user.id, name=args.name, group=group, quota_micros=quota, expires_at=expires_at,
        models=split_list(args.models), allow_ips=networks, limits=commands.limits.limit_changes(args),
    )  # fmt: skip
    if cli.json:
        cli.print_record({"id": key_id, "key": secret})
        return 0
    print(f"Created API key {key_id} ({args.name!r}) for {user.name!r} in group {group!r}:")
    print(f"    {secret}")
    print("This key is shown only now: store it safely, it cannot be displayed again.")
    return 0


def _configure_user_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER")


def _run_key_list(args: argparse.Namespace, cli: CommandContext) -> int:
    conn = cli.connect()
    user = require_user(conn, args.user)
    columns = ["id", "name", "prefix", "group", "enabled", "quota_micros", "used_micros", "expires_at", "last_used_at"]
    cli.print_table(keys.list_keys(conn, user.id), columns)
    return 0


def _configure_key_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int, metavar="ID")


def _run_key_disable(args: argparse.Namespace, cli: CommandContext) -> int:
    return _change_key(args, cli, lambda conn: keys.set_key_enabled(conn, args.id, False), "disabled")


def _run_key_enable(args: argparse.Namespace, cli: CommandContext) -> int:
    return _change_key(args, cli, lambda conn: keys.set_key_enabled(conn, args.id, True), "enabled")


def _run_key_delete(args: argparse.Namespace, cli: CommandContext) -> int:
    return _change_key(args, cli, lambda conn: keys.delete_key(conn, args.id), "deleted")


def _change_key(args: argparse.Namespace, cli: CommandContext, change: Callable[[Any], bool], done: str) -> int:
    conn = cli.connect()
    if not change(conn):
        raise LookupError(f"no API key with id {args.id}")
    key: KeyRecord = keys.get_key(conn, args.id)
    cli.print_record(key, text=f"API key {key.id} ({key.name!r}, {key.prefix}) of {key.user_name!r} {done}.")
    return 0


# --- plugins and helpers ------------------------------------------------------------------


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def _run_plugins(args: argparse.Namespace, cli: CommandContext) -> int:
    cli.print_table(cli.registry.plugins, ["name", "module", "distribution", "version"])
    return 0
