"""``/api/v1/audit`` (admin): the audit log of writes, newest first."""

from __future__ import annotations

from typing import Any

from gateway_core.admin import audit
from .operation import ApiCall, Operation, Param
from .schema import page
from .shapes import AUDIT, audit_json

QUERY = (
    Param("target", {"type": "string", "minLength": 1, "maxLength": 200}, "only rows about this record, e.g. 'key 7' or 'user 3'"),
    Param("cursor", {"type": "string", "pattern": "^[0-9]{1,18}$"}, "next_cursor of the previous page"),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": audit.MAX_PAGE}, "rows per page (default 50)"),
)


async def list_audit(call: ApiCall) -> dict[str, Any]:
    limit = call.query.get("limit", 50)
    before = int(call.query["cursor"]) if "cursor" in call.query else None
    entries = await audit.list_entries(call.admin, before_id=before, limit=limit + 1, target=call.query.get("target"))
    more = len(entries) > limit
    entries = entries[:limit]
    return {"items": [audit_json(entry) for entry in entries], "next_cursor": str(entries[-1].id) if more and entries else None}


OPERATIONS = (
    Operation("GET", "/audit", "The audit log of writes: who, through what, before and after (admin)", "audit", "admin", list_audit, page(AUDIT), query=QUERY),
)
