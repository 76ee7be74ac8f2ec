"""``relaygate token create|list|revoke``: personal access tokens for the
management API (``/api/v1/``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..hookspecs import hookimpl
from .kit import CommandContext, parse_expires

if TYPE_CHECKING:
    from ..store.access_records import AccessTokenRecord
    from ..admin import Admin


DEFAULT_DAYS = 90  # a token made without --expires lapses: a forgotten script's token is not a key for ever


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("token create", "create a personal access token for the management API (shown once)", _configure_create, _run_create)
    register("token list", "list access tokens (a user's, or everyone's)", _configure_list, _run_list)
    register("token revoke", "revoke an access token", _configure_revoke, _run_revoke)


def _configure_create(parser: argparse.ArgumentParser) -> None:
    from ..store.access_records import SCOPES

    parser.add_argument("user", metavar="USER")
    parser.add_argument("--scope", choices=SCOPES, default="read", help="read (default), write, or admin (admins only)")
    parser.add_argument(
        "--expires", metavar="ISO8601", help=f"expiry, e.g. 2026-12-31 or 2026-12-31T18:00:00Z, or 'never' (default: in {DEFAULT_DAYS} days)"
    )
    parser.add_argument("--name", help="a label for the token (default: 'cli' and today's date)")


def _run_create(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import tokens, users

    if args.expires is None:
        expires_at: float | None = time.time() + DEFAULT_DAYS * 86_400
    else:
        expires_at = None if args.expires.strip().lower() == "never" else parse_expires(args.expires)
    name = args.name if args.name is not None else time.strftime("cli %Y-%m-%d", time.gmtime())

    async def create(admin: Admin) -> tuple[AccessTokenRecord, str]:
        user = await users.find_user(admin, args.user)
        token, secret = await tokens.create_token(admin, user.id, scope=args.scope, name=name, expires_at=expires_at)
        await cli.audit(admin, "token.create", f"token {token.id}", None, token)
        return token, secret

    token, secret = cli.run(create)
    if cli.json:
        cli.print_record({"id": token.id, "token": secret})
        return 0
    until = time.strftime("%Y-%m-%d", time.gmtime(token.expires_at)) if token.expires_at else "never"
    print(f"Created access token {token.id} ({token.name!r}, scope {token.scope}, expires {until}) for {token.user_name!r}:")
    print(f"    {secret}")
    print("This token is shown only now: store it safely, it cannot be displayed again.")
    return 0


def _configure_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("user", metavar="USER", nargs="?", help="whose tokens (default: everyone's)")


def _run_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import tokens, users

    async def listed(admin: Admin) -> list[AccessTokenRecord]:
        user_id = (await users.find_user(admin, args.user)).id if args.user else None
        return await tokens.list_tokens(admin, user_id)

    columns = ["id", "user_name", "name", "prefix", "scope", "created_at", "expires_at", "revoked_at"]
    cli.print_table(cli.run(listed), columns)
    return 0


def _configure_revoke(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int, metavar="ID")


def _run_revoke(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import tokens

    async def revoke(admin: Admin) -> AccessTokenRecord:
        before = await tokens.get_token(admin, args.id)
        token = await tokens.revoke_token(admin, args.id)
        await cli.audit(admin, "token.revoke", f"token {token.id}", before, token)
        return token

    token = cli.run(revoke)
    cli.print_record(token, text=f"Access token {token.id} ({token.name!r}, {token.prefix}) of {token.user_name!r} revoked.")
    return 0
