"""``relaygate team add|list|show|edit|delete``, ``team member add|remove|role``,
``team key add|list|edit`` (the team's keys) and ``team topup`` (docs/teams.md).

The command line acts as a site admin: every rule is the admin layer's
(:mod:`gateway_core.admin.teams`, :mod:`gateway_core.admin.team_keys`), with the same
messages as the management API. Admin modules are imported inside the commands."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..hookspecs import hookimpl
from ..records import DEFAULT_GROUP
from .kit import CommandContext, no_arguments, split_list
from .limits import add_budget_options, add_limit_options, limit_changes

if TYPE_CHECKING:
    from ..admin import Admin
    from ..admin.teams import TeamView


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("team add", "create a team with its own wallet, opened to groups", _configure_team_add, _run_team_add)
    register("team list", "list teams", no_arguments, _run_team_list)
    register("team show", "a team's wallet, groups, limits, budgets, members and spend", _configure_team, _run_team_show)
    register("team edit", "rename a team, open or close its groups, set its rate limits and budgets", _configure_team_edit, _run_team_edit)
    register("team delete", "delete a team for good (its keys stop; wallet, ledger and logs kept)", _configure_team, _run_team_delete)
    register("team member add", "add a user to a team (role admin, member or viewer)", _configure_member_add, _run_member_add)
    register("team member remove", "take a user out of a team: their keys in it stop at once", _configure_member, _run_member_remove)
    register("team member role", "change a member's role", _configure_member_role, _run_member_role)
    register("team key add", "create a service key of the team, paid by its wallet (its secret is shown once)", _configure_key_add, _run_key_add)
    register("team key list", "list a team's keys", _configure_team, _run_key_list)
    register("team key edit", "change a team key's name, models or allowed networks", _configure_key_edit, _run_key_edit)
    register("team topup", "credit a team's wallet", _configure_topup, _run_topup)


def _configure_team(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team", metavar="TEAM")


async def _team_id(admin: Admin, name: str) -> int:
    from ..admin import teams

    return (await teams.find_team(admin, name)).id


def _configure_team_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--groups", default=DEFAULT_GROUP, metavar="G1,G2", help="groups the team's keys may use (default: default)")


def _run_team_add(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import teams

    async def create(admin: Admin) -> Any:
        team = await teams.create_team(admin, args.name, groups=split_list(args.groups))
        await cli.audit(admin, "team.create", f"team {team.id}", None, team)
        return await teams.team_view(admin, team.id)

    view = cli.run(create)
    cli.print_record(_view_json(view), text=f"Created team {view.team.name!r} (id {view.team.id}) with groups: {', '.join(view.account.groups)}")
    return 0


def _run_team_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import teams

    async def listed(admin: Admin) -> list[dict[str, Any]]:
        rows = []
        for team, _ in await teams.list_teams(admin):
            view = await teams.team_view(admin, team.id)
            rows.append({"id": team.id, "name": team.name, "balance_micros": view.account.balance_micros,
                         "groups": list(view.account.groups), "members": len(view.members)})  # fmt: skip
        return rows

    cli.print_table(cli.run(listed), ["id", "name", "balance_micros", "groups", "members"])
    return 0


def _view_json(view: TeamView, spend: Any = None) -> dict[str, Any]:
    from ..runtime.jsonable import to_jsonable

    found = {
        "id": view.team.id, "name": view.team.name, "account_id": view.team.account_id,
        "balance_micros": view.account.balance_micros, "groups": list(view.account.groups), "limits": view.limits,
        "members": [{"user_id": m.user_id, "user": m.user_name, "role": m.role} for m in view.members],
    }  # fmt: skip
    if spend is not None:
        found["usage"] = to_jsonable(spend)
    return found


def _run_team_show(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import teams
    from ..runtime.jsonable import to_jsonable
    from ..money import format_usd

    async def show(admin: Admin) -> tuple[TeamView, Any, Any]:
        team_id = await _team_id(admin, args.team)
        return await teams.team_view(admin, team_id), await teams.team_usage(admin, team_id), await teams.team_usage_by(admin, team_id, "member")

    view, spend, by_member = cli.run(show)
    limits = ", ".join(f"{name} {value}" for name, value in view.limits.items() if value is not None) or "none"
    members = ", ".join(f"{m.user_name} ({m.role})" for m in view.members) or "none"
    text = (
        f"Team {view.team.name!r} (id {view.team.id})\n  wallet: {format_usd(view.account.balance_micros)} USD\n"
        f"  groups: {', '.join(view.account.groups)}\n  limits and budgets (micro-USD): {limits}\n  members: {members}\n"
        f"  usage: {spend.requests} requests, {spend.errors} errors, {spend.input_tokens} input and {spend.output_tokens} "
        f"output tokens, {format_usd(spend.cost_micros)} USD"
    )
    for total in by_member:  # who spent what: each member's keys, and the team's service keys
        text += (f"\n    {total.label or '(service keys)'}: {total.requests} requests, {total.errors} errors, "
                 f"{total.input_tokens + total.output_tokens} tokens, {format_usd(total.cost_micros)} USD")  # fmt: skip
    cli.print_record({**_view_json(view, spend), "usage_by_member": [to_jsonable(total) for total in by_member]}, text=text)
    return 0


def _configure_team_edit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team", metavar="TEAM")
    parser.add_argument("--rename", metavar="NAME", help="a new name")
    parser.add_argument("--open", metavar="G1,G2", help="open these groups to the team's keys")
    parser.add_argument("--close", metavar="G1,G2", help="close these groups (no new key of the team may use them)")
    add_limit_options(parser)  # checked by the admin layer: its message, as in the console and the API
    add_budget_options(parser)


def _run_team_edit(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import teams

    changes = limit_changes(args)
    if args.rename is None and args.open is None and args.close is None and not changes:
        raise ValueError("say what to change: --rename, --open, --close, a rate limit or a budget")

    async def edit(admin: Admin) -> TeamView:
        team_id = await _team_id(admin, args.team)
        before = await teams.team_view(admin, team_id)
        after = await teams.edit_team(
            admin, team_id, name=args.rename, opened=split_list(args.open or ""), closed=split_list(args.close or ""), limits=changes
        )
        await cli.audit(admin, "team.update", f"team {team_id}", _view_json(before), _view_json(after))
        return after

    view = cli.run(edit)
    cli.print_record(_view_json(view), text=f"Team {view.team.name!r} (id {view.team.id}) changed.")
    return 0


def _run_team_delete(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import teams

    async def delete(admin: Admin) -> Any:
        team = await teams.delete_team(admin, await _team_id(admin, args.team))
        await cli.audit(admin, "team.delete", f"team {team.id}", team, None)
        return team

    team = cli.run(delete)
    cli.print_record(team, text=f"Deleted team {team.name!r} (id {team.id}): its keys stop; its wallet, ledger and logs are kept.")
    return 0


def _configure_member(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team", metavar="TEAM")
    parser.add_argument("user", metavar="USER")


def _configure_member_add(parser: argparse.ArgumentParser) -> None:
    _configure_member(parser)
    parser.add_argument("--role", default="member", metavar="ROLE", help="admin, member (default) or viewer")


def _configure_member_role(parser: argparse.ArgumentParser) -> None:
    _configure_member(parser)
    parser.add_argument("role", metavar="ROLE", help="admin, member or viewer")


def _set_member(args: argparse.Namespace, cli: CommandContext, action: str) -> int:
    from ..admin import teams, users

    async def put(admin: Admin) -> Any:
        team_id = await _team_id(admin, args.team)
        person = await users.find_user(admin, args.user)
        member = await teams.set_member(admin, team_id, person.id, args.role)
        await cli.audit(admin, action, f"team {team_id}", None, member)
        return member

    member = cli.run(put)
    cli.print_record(member, text=f"{member.user_name!r} is a{'n' if member.role == 'admin' else ''} {member.role} of team {member.team_name!r}.")
    return 0


def _run_member_add(args: argparse.Namespace, cli: CommandContext) -> int:
    return _set_member(args, cli, "team.member.add")


def _run_member_role(args: argparse.Namespace, cli: CommandContext) -> int:
    return _set_member(args, cli, "team.member.role")


def _run_member_remove(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import teams, users

    async def remove(admin: Admin) -> None:
        team_id = await _team_id(admin, args.team)
        person = await users.find_user(admin, args.user)
        await teams.remove_member(admin, team_id, person.id)
        await cli.audit(admin, "team.member.remove", f"team {team_id}", {"user_id": person.id}, None)

    cli.run(remove)
    cli.print_record({"team": args.team, "user": args.user, "removed": True},
                     text=f"{args.user!r} is no longer in team {args.team!r}: their keys in it are deleted.")  # fmt: skip
    return 0


def _configure_key_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team", metavar="TEAM")
    parser.add_argument("--name", default="service", help="the key's name (default: service)")
    parser.add_argument("--group", metavar="G", help="one of the team's groups (default: default, else its first)")
    parser.add_argument("--models", metavar="M1,M2", help="only these models (default: any of the group's)")
    parser.add_argument("--quota", metavar="USD", help="the most this key may spend, ever")


def _run_key_add(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import team_keys
    from ..admin.rules import budget_micros

    quota = budget_micros(args.quota, "quota") if args.quota is not None else None  # the console's and the API's rule and words

    async def create(admin: Admin) -> Any:
        team_id = await _team_id(admin, args.team)
        key, secret = await team_keys.create_team_key(
            admin, team_id, service=True, name=args.name, group=args.group, quota_micros=quota, models=split_list(args.models or "")
        )
        await cli.audit(admin, "team.key.create", f"key {key.id}", None, key)
        return key, secret

    key, secret = cli.run(create)
    if cli.json:
        cli.print_record({"id": key.id, "key": secret, "team_id": key.team_id})
        return 0
    print(f"Created service key {key.id} ({key.name!r}) of team {args.team!r} in group {key.group!r}, paid by the team's wallet:")
    print(f"    {secret}")
    print("This key is shown only now: store it safely, it cannot be displayed again.")
    return 0


def _run_key_list(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import team_keys

    async def listed(admin: Admin) -> list[Any]:
        return await team_keys.list_team_keys(admin, await _team_id(admin, args.team))

    cli.print_table(cli.run(listed), ["id", "name", "prefix", "group", "member_id", "enabled", "quota_micros", "used_micros"])
    return 0


def _configure_key_edit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team", metavar="TEAM")
    parser.add_argument("id", type=int, metavar="KEY_ID")
    parser.add_argument("--name", help="a new name")
    parser.add_argument("--models", metavar="M1,M2", help="only these models ('' : any of its group's)")
    parser.add_argument("--allow-ips", metavar="NET1,NET2", help="only from these networks, IP addresses or CIDR ('': any)")


def _run_key_edit(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import team_keys

    if args.name is None and args.models is None and args.allow_ips is None:
        raise ValueError("say what to change: --name, --models or --allow-ips")
    models = None if args.models is None else split_list(args.models)
    networks = None if args.allow_ips is None else split_list(args.allow_ips)

    async def edit(admin: Admin) -> Any:
        team_id = await _team_id(admin, args.team)
        before, _ = await team_keys.team_key(admin, team_id, args.id)
        after = await team_keys.update_team_key(admin, team_id, args.id, name=args.name, models=models, allow_ips=networks)
        await cli.audit(admin, "team.key.update", f"key {after.id}", before, after)
        return after

    key = cli.run(edit)
    cli.print_record(
        {"id": key.id, "name": key.name, "team_id": key.team_id, "member_id": key.member_id, "models": list(key.models), "allow_ips": list(key.allow_ips)},
        text=f"Key {key.id} ({key.name!r}) of team {args.team!r}: models {', '.join(key.models) or 'any'}; networks {', '.join(key.allow_ips) or 'any'}.",
    )  # fmt: skip
    return 0


def _configure_topup(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team", metavar="TEAM")
    parser.add_argument("amount", metavar="AMOUNT", help="USD, e.g. 25 or 12.50")
    parser.add_argument("--note", help="why (kept in the ledger)")


def _run_topup(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import teams
    from ..money import format_usd, parse_usd

    amount = parse_usd(args.amount)

    async def topup(admin: Admin) -> tuple[int, int]:
        team_id = await _team_id(admin, args.team)
        balance = await teams.topup_team(admin, team_id, amount, args.note)
        await cli.audit(admin, "team.topup", f"team {team_id}", None, {"amount_micros": amount, "balance_micros": balance})
        return team_id, balance

    team_id, balance = cli.run(topup)
    cli.print_record({"team": args.team, "team_id": team_id, "amount_micros": amount, "balance_micros": balance},
                     text=f"Credited {format_usd(amount)} USD to team {args.team!r}: its wallet holds {format_usd(balance)} USD.")  # fmt: skip
    return 0
