"""Teams (``docs/teams.md``): the teams a person may see, and one team's page — its
wallet, groups, limits, members, keys and who spent what — with the forms their role
allows. Site admins create, rename, delete and top up teams here, and set their
budgets and rate limits; members and
keys are :mod:`.team_members`.

Every read and change is the admin layer's (:mod:`gateway_core.admin.teams`,
:mod:`gateway_core.admin.team_keys`) with the signed-in person as the caller, the
same rules and messages as the CLI and the management API: a team one is not in is
404, an operation one's role does not allow 403 (:func:`..web.page`)."""

from __future__ import annotations

import time

from starlette.responses import Response

from gateway_core.admin import Conflict, NotFound, groups, team_keys, teams
from gateway_core.admin.rules import parse_rate_limit
from gateway_core.records import BUDGET_COLUMNS, LIMIT_COLUMNS
from gateway_core.team_records import ROLES, TeamRecord

from ..forms import FormError, budget_changes, optional_usd, text
from ..i18n import _
from ..web import Ctx, page
from .keys import LIMIT_LABELS

PERIODS = ("daily", "weekly", "monthly")  # in the order of BUDGET_COLUMNS
USAGE_DAYS = 30  # the span of a team page's usage by member


async def _list_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    listed = await teams.list_teams(ctx.admin, caller=ctx.user)
    names = [group.name for group in await groups.list_groups(ctx.admin)] if ctx.user.is_admin else []
    values = {name: str(value) for name, value in ctx.form.items()} if error else {}
    return ctx.render("teams.html", status=status, error=error, teams=listed, groups=names, values=values)


@page()
async def team_list(ctx: Ctx) -> Response:
    return await _list_page(ctx)


@page()
async def team_create(ctx: Ctx) -> Response:
    try:
        name = text(ctx.form, "name", required=_("Give the team a name."), max_length=200)
        opened = [str(group) for group in ctx.form.getlist("groups")] or ["default"]
        created = await teams.create_team(ctx.admin, name, groups=opened, caller=ctx.user)
    except (ValueError, Conflict) as exc:  # FormError, Invalid, Conflict; Forbidden is the page's 403
        return await _list_page(ctx, 400, str(exc))
    await ctx.audit("team.create", f"team {created.id}", None, created)
    return ctx.redirect(f"/teams/{created.id}", "created")


async def team_page(ctx: Ctx, status: int = 200, error: str | None = None) -> Response:
    """One team as the viewer's role shows it; ``error``: a form's message."""
    team_id = ctx.path_int("team_id")
    view = await teams.team_view(ctx.admin, team_id, caller=ctx.user)
    role = view.role
    listed = await team_keys.list_team_keys(ctx.admin, team_id, caller=ctx.user) if view.manages or view.makes_own_keys else []
    since = time.time() - USAGE_DAYS * 86_400
    by_member = await teams.team_usage_by(ctx.admin, team_id, "member", since=since, caller=ctx.user)
    return ctx.render(
        "team.html", status=status, error=error, view=view, team=view.team, role=role, site=view.site,
        logs_url=ctx.url(f"{'/admin/logs' if view.site else '/logs'}?team={team_id}"), manage=view.manages, make_keys=view.makes_own_keys, keys=listed, roles=ROLES, periods=PERIODS,
        budgets={period: view.limits.get(column) for period, column in zip(PERIODS, BUDGET_COLUMNS)}, limit_columns=LIMIT_COLUMNS, limit_labels=LIMIT_LABELS,
        names={member.user_id: member.user_name for member in view.members}, by_member=by_member, usage_days=USAGE_DAYS,
        all_groups=[group.name for group in await groups.list_groups(ctx.admin)] if view.site else [],
    )  # fmt: skip


@page()
async def team_detail(ctx: Ctx) -> Response:
    return await team_page(ctx)


@page()
async def team_edit(ctx: Ctx) -> Response:
    """A site admin renames the team and opens or closes its groups."""
    team_id = ctx.path_int("team_id")
    try:
        before = await teams.edit_team(ctx.admin, team_id, caller=ctx.user)  # no change yet: the role's check first
        name = text(ctx.form, "name", required=_("Give the team a name."), max_length=200)
        wanted = [str(group) for group in ctx.form.getlist("groups")]
        if not wanted:
            raise FormError(_("Open at least one group to the team."))
        opened = [group for group in wanted if group not in before.account.groups]
        closed = [group for group in before.account.groups if group not in wanted]
        after = await teams.edit_team(ctx.admin, team_id, name=name, opened=opened, closed=closed, caller=ctx.user)
    except (ValueError, Conflict) as exc:
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.update", f"team {team_id}", before.team, after.team)
    return ctx.redirect(f"/teams/{team_id}", "saved")


@page()
async def team_budgets(ctx: Ctx) -> Response:
    """A site admin's budgets of the team (every key of it together), in USD; empty: none."""
    team_id = ctx.path_int("team_id")
    await teams.edit_team(ctx.admin, team_id, caller=ctx.user)  # no change yet: the role's check first
    try:
        after = await teams.edit_team(ctx.admin, team_id, limits=budget_changes(ctx.form), caller=ctx.user)
    except ValueError as exc:
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.update", f"team {team_id}", None, after.limits)
    return ctx.redirect(f"/teams/{team_id}", "saved")


@page()
async def team_limits(ctx: Ctx) -> Response:
    """A site admin's rate limits of the team (every key of it together); empty: none, 0: unlimited."""
    team_id = ctx.path_int("team_id")
    before = await teams.edit_team(ctx.admin, team_id, caller=ctx.user)  # no change yet: the role's check first
    try:
        changes = {column: parse_rate_limit(text(ctx.form, column, max_length=20), column) for column in LIMIT_COLUMNS}
        after = await teams.edit_team(ctx.admin, team_id, limits=changes, caller=ctx.user)
    except ValueError as exc:  # the admin layer's Invalid: the same message as the CLI's and the API's
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.update", f"team {team_id}", before.limits, after.limits)
    return ctx.redirect(f"/teams/{team_id}", "saved")


@page()
async def team_topup(ctx: Ctx) -> Response:
    team_id = ctx.path_int("team_id")
    try:
        amount = optional_usd(text(ctx.form, "amount"), _("Amount"))
        if not amount:
            raise FormError(_("Enter an amount of USD above zero, like 10 or 2.50."))
        note = text(ctx.form, "note", max_length=500, label=_("The note")) or None
        balance = await teams.topup_team(ctx.admin, team_id, amount, note, caller=ctx.user)
    except ValueError as exc:
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.topup", f"team {team_id}", None, {"amount_micros": amount, "balance_micros": balance})
    return ctx.redirect(f"/teams/{team_id}", "topped-up")


@page()
async def team_delete(ctx: Ctx) -> Response:
    team = await teams.delete_team(ctx.admin, ctx.path_int("team_id"), caller=ctx.user)
    await ctx.audit("team.delete", f"team {team.id}", {"id": team.id, "name": team.name}, None)
    return ctx.redirect("/teams", "deleted")


async def chosen_team(ctx: Ctx, value: str) -> TeamRecord | None:
    """The team a page's ``team`` parameter names (the dashboard's, the logs'), when the
    viewer may read its usage (any role; else the admin layer's 404); ``None`` without one."""
    value = value.strip()
    if not value:
        return None
    if not value.isdigit():
        raise NotFound(f"no team with id {value[:40]!r}")
    return (await teams.team_view(ctx.admin, int(value), caller=ctx.user)).team
