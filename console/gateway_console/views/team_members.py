"""A team's members and keys (``docs/teams.md``): its admins add and remove members
and change their roles, create the team's service keys, edit, limit and delete every
key of it; a member makes, edits, limits and deletes their own keys in it. The admin layer
decides who may (the same rules as the CLI's and the API's): this module only reads
the forms and shows its answers."""

from __future__ import annotations

from starlette.responses import Response

from gateway_core.admin import NotFound, team_keys, teams

from ..forms import budget_changes, split_list, text
from ..i18n import _
from ..web import Ctx, page
from .teams import team_page


@page()
async def member_add(ctx: Ctx) -> Response:
    team_id = ctx.path_int("team_id")
    try:
        name = text(ctx.form, "name", required=_("Give the name of the person to add."), max_length=200)
        member = await teams.add_member_by_name(ctx.admin, team_id, name, str(ctx.form.get("role") or ""), caller=ctx.user)
    except (ValueError, NotFound) as exc:  # no such person (a team one is not in is 404 again: team_page)
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.member.add", f"team {team_id}", None, member)
    return ctx.redirect(f"/teams/{team_id}", "saved")


@page()
async def member_role(ctx: Ctx) -> Response:
    """A member's new role: a viewer's keys in the team stop at once."""
    team_id = ctx.path_int("team_id")
    try:
        member = await teams.set_member(ctx.admin, team_id, ctx.path_int("user_id"), str(ctx.form.get("role") or ""), caller=ctx.user)
    except ValueError as exc:
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.member.role", f"team {team_id}", None, member)
    return ctx.redirect(f"/teams/{team_id}", "saved")


@page()
async def member_remove(ctx: Ctx) -> Response:
    """Take a member out: their keys in the team are deleted and stop at once."""
    team_id, user_id = ctx.path_int("team_id"), ctx.path_int("user_id")
    await teams.remove_member(ctx.admin, team_id, user_id, caller=ctx.user)
    await ctx.audit("team.member.remove", f"team {team_id}", {"user_id": user_id}, None)
    return ctx.redirect(f"/teams/{team_id}", "deleted")


@page()
async def key_new(ctx: Ctx) -> Response:
    """A key paid by the team: the viewer's own, or (``service``) the team's."""
    team_id = ctx.path_int("team_id")
    try:
        name = text(ctx.form, "name", max_length=200, label=_("The name")) or "default"
        group = text(ctx.form, "group", max_length=200) or None
        key, secret = await team_keys.create_team_key(
            ctx.admin, team_id, caller=ctx.user, service=ctx.form.get("service") == "on", name=name, group=group
        )
    except ValueError as exc:
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.key.create", f"key {key.id}", None, key)
    return ctx.reveal_once(f"/teams/{team_id}/keys/{key.id}/created", secret)


@page()
async def key_created(ctx: Ctx) -> Response:
    team_id = ctx.path_int("team_id")
    key, _site = await team_keys.team_key(ctx.admin, team_id, ctx.path_int("key_id"), caller=ctx.user)
    path = f"/teams/{team_id}/keys/{key.id}/created"
    page_html = ctx.render("key_created.html", key=key, secret=ctx.revealed(path), back=f"/teams/{team_id}")
    return ctx.shown_once(page_html, path)


@page()
async def key_budgets(ctx: Ctx) -> Response:
    """A team key's budgets: a site admin's bind the team; its admins and the key's
    member may only tighten those (the admin layer refuses the rest)."""
    team_id, key_id = ctx.path_int("team_id"), ctx.path_int("key_id")
    await team_keys.team_key(ctx.admin, team_id, key_id, caller=ctx.user)  # not found, or not the viewer's to change, first
    try:
        changes = budget_changes(ctx.form)  # the admin layer's rule and words, as the CLI's and the API's
        key, stored = await team_keys.set_team_key_limits(ctx.admin, team_id, key_id, changes, caller=ctx.user)
    except ValueError as exc:  # Invalid, Locked: a limit the site set
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.key.limits", f"key {key_id}", None, stored)
    return ctx.redirect(f"/teams/{team_id}", "saved")


@page()
async def key_edit(ctx: Ctx) -> Response:
    """A team key's name, models and allowed networks (comma-separated; empty: any):
    what a site admin set, the team may only narrow (the admin layer refuses the rest)."""
    team_id, key_id = ctx.path_int("team_id"), ctx.path_int("key_id")
    before, _site = await team_keys.team_key(ctx.admin, team_id, key_id, caller=ctx.user)  # not found first
    try:
        name = text(ctx.form, "name", required=_("Give the key a name."), max_length=200)
        models = split_list(text(ctx.form, "models", max_length=4000))
        networks = split_list(text(ctx.form, "allow_ips", max_length=4000))
        after = await team_keys.update_team_key(ctx.admin, team_id, key_id, name=name, models=models, allow_ips=networks, caller=ctx.user)
    except ValueError as exc:  # Invalid, Locked: what the site set
        return await team_page(ctx, 400, str(exc))
    await ctx.audit("team.key.update", f"key {key_id}", before, after)
    return ctx.redirect(f"/teams/{team_id}", "saved")


@page()
async def key_delete(ctx: Ctx) -> Response:
    team_id = ctx.path_int("team_id")
    key = await team_keys.delete_team_key(ctx.admin, team_id, ctx.path_int("key_id"), caller=ctx.user)
    await ctx.audit("team.key.delete", f"key {key.id}", None, {"deleted": True})
    return ctx.redirect(f"/teams/{team_id}", "deleted")
