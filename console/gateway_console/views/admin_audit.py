"""The audit log of writes, for admins: who, through what, before and after,
newest first (keyset-paginated)."""

from __future__ import annotations

import json

from starlette.responses import Response

from gateway_core.admin import audit

from ..web import Ctx, page

PAGE_SIZE = 50


@page(admin=True)
async def audit_list(ctx: Ctx) -> Response:
    query = ctx.request.query_params
    before = int(query["before"]) if query.get("before", "").isdigit() else None
    target = query.get("target", "").strip()[:200] or None
    entries = await audit.list_entries(ctx.admin, before_id=before, limit=PAGE_SIZE + 1, target=target)
    older = None
    if len(entries) > PAGE_SIZE:
        entries = entries[:PAGE_SIZE]
        older = ctx.url(f"/admin/audit?before={entries[-1].id}" + (f"&target={target}" if target else ""))
    shown = [(entry, _json(entry.before), _json(entry.after)) for entry in entries]
    return ctx.render("admin_audit.html", entries=shown, older=older, target=target or "")


def _json(value: object) -> str:
    return "" if value is None else json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True)
