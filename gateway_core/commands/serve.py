"""``relaygate serve`` and ``relaygate init``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..hookspecs import hookimpl
import secrets as random

from ..secrets import hash_password
from ..store import atomic, channels, keys, prices, users
from ..store.groups import ensure_groups
from ..store.migrations import DEFAULT_GROUP
from .kit import EXIT_USAGE, CommandContext, CommandError

DEMO_TYPE = "demo"
DEMO_MODEL = "demo-chat"


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("serve", "run the gateway", _configure_serve, _run_serve)
    register("init", "create the database, an admin, a demo channel and key (idempotent)", _configure_init, _run_init)


def _configure_serve(parser: argparse.ArgumentParser) -> None:
    _address_options(parser)
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default 1)")


def _run_serve(args: argparse.Namespace, cli: CommandContext) -> int:
    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    try:
        from ..server import serve
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
