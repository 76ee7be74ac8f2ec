"""Budgets that reset (spending caps per day, week and month): a user reads their
own and their keys' (``/api/v1/budgets``, ``/api/v1/keys/{key_id}/budgets``);
admins read and set any user's and any key's. Each answer has the caps and
where each current window stands (see :mod:`gateway_core.billing.budgets`)."""

from __future__ import annotations

from typing import Any

from gateway_core.admin import keys, users
from gateway_core.admin.budgets import PERIODS, BudgetStatus, budget_status, budgets_of
from gateway_core.money import MAX_MICROS, format_usd
from gateway_core.records import Budgets
from .errors import ApiError
from .operation import ApiCall, Operation
from .schema import TIME_OR_NULL, Schema, array, budget, micros, obj, usd
from .shapes import amount_of

CAP_FIELDS: dict[str, Schema] = {}
SET_CAP_FIELDS: dict[str, Schema] = {}  # refused with the admin layer's words, as the CLI and the console refuse them
for _period in PERIODS:
    CAP_FIELDS[_period] = usd(f"most to spend per {_period} window; null: no cap", nullable=True)
    CAP_FIELDS[f"{_period}_micros"] = micros(f"most to spend per {_period} window; null: no cap", nullable=True)
    SET_CAP_FIELDS[_period] = budget(f"most to spend per {_period} window; null: no cap")
    SET_CAP_FIELDS[f"{_period}_micros"] = budget(f"most to spend per {_period} window; null: no cap", in_micros=True)
CAPS = obj(CAP_FIELDS, tuple(CAP_FIELDS))
SET_CAPS = obj(SET_CAP_FIELDS)
WINDOW = obj(
    {"whose": {"type": "string", "description": "'user', or 'key NAME'"}, "key_id": {"type": ["integer", "null"]},
     "period": {"enum": list(PERIODS)}, "cap": usd("the cap"), "cap_micros": micros("the cap"),
     "spent": usd("counted in the current window, requests in progress included"),
     "spent_micros": micros("counted in the current window, requests in progress included"),
     "resets_at": {**TIME_OR_NULL, "description": "when the window frees spend (Unix seconds); null: only requests in progress count"}},
    ("whose", "key_id", "period", "cap", "cap_micros", "spent", "spent_micros", "resets_at"),
)  # fmt: skip
BUDGETS = obj(
    {"caps": {**CAPS, "description": "the user's caps, or the key's"}, "windows": array(WINDOW), "window": {"enum": ["calendar", "rolling"]},
     "timezone": {"type": "string", "description": "the time zone of calendar windows"}},
    ("caps", "windows", "window", "timezone"),
)  # fmt: skip


def caps_json(budgets: Budgets) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for period in PERIODS:
        cap = getattr(budgets, period)
        data[period] = None if cap is None else format_usd(cap)
        data[f"{period}_micros"] = cap
    return data


def window_json(status: BudgetStatus) -> dict[str, Any]:
    return {
        "whose": status.whose, "key_id": status.key_id, "period": status.period, "cap": format_usd(status.cap_micros),
        "cap_micros": status.cap_micros, "spent": format_usd(status.spent_micros), "spent_micros": status.spent_micros,
        "resets_at": status.resets_at,
    }  # fmt: skip


async def budget_answer(call: ApiCall, user_id: int, caps: Budgets, key_id: int | None = None) -> dict[str, Any]:
    config = call.services.config
    found = await budget_status(
        call.admin, user_id, timezone=config.budget_timezone, window=config.budget_window, now=call.services.clock(), key_id=key_id
    )
    if key_id is not None:
        found = [status for status in found if status.key_id == key_id]
    return {"caps": caps_json(caps), "windows": [window_json(status) for status in found], "window": config.budget_window,
            "timezone": config.budget_timezone}  # fmt: skip


def _changes(body: dict[str, Any]) -> dict[str, int | None]:
    """The caps in the body as limit columns (``null`` clears one)."""
    changes: dict[str, int | None] = {}
    for period in PERIODS:
        if period in body or f"{period}_micros" in body:
            value = amount_of(body, period, allow_none=True)
            if value is not None and not 0 <= value <= MAX_MICROS:
                raise ApiError(400, f"{period} must not be negative", field=period)
            changes[f"{period}_budget_micros"] = value
    return changes


async def user_caps(call: ApiCall, user_id: int) -> Budgets:
    return budgets_of(await users.user_limits(call.admin, await users.get_user(call.admin, user_id)))


async def get_my_budgets(call: ApiCall) -> dict[str, Any]:
    return await budget_answer(call, call.user_id, await user_caps(call, call.user_id))


async def get_key_budgets(call: ApiCall) -> dict[str, Any]:
    key = await keys.get_key(call.admin, call.path["key_id"], owner=call.user_id)
    return await budget_answer(call, key.user_id, key.budgets, key.id)


async def get_user_budgets(call: ApiCall) -> dict[str, Any]:
    user_id = call.path["user_id"]
    return await budget_answer(call, user_id, await user_caps(call, user_id))


async def set_user_budgets(call: ApiCall) -> dict[str, Any]:
    user_id = call.path["user_id"]
    user = await users.get_user(call.admin, user_id)
    before = await user_caps(call, user_id)
    stored = await users.set_user_limits(call.admin, user, _changes(call.body))
    after = budgets_of(stored)
    await call.audit("user.budgets", f"user {user_id}", caps_json(before), caps_json(after))
    return await budget_answer(call, user_id, after)


async def set_key_budgets(call: ApiCall) -> dict[str, Any]:
    key_id = call.path["key_id"]
    before = await keys.get_key(call.admin, key_id)
    key, _ = await keys.set_key_limits(call.admin, key_id, _changes(call.body))  # an operator's: locked against the owner
    await call.audit("key.budgets", f"key {key_id}", caps_json(before.budgets), caps_json(key.budgets))
    return await budget_answer(call, key.user_id, key.budgets, key.id)


TAG = "budgets"
E = (400, 401, 403, 404)
OPERATIONS = (
    Operation("GET", "/budgets", "Your budgets, and where each window of yours and your keys' stands", TAG, "read", get_my_budgets, BUDGETS, errors=(401,)),
    Operation("GET", "/keys/{key_id}/budgets", "One of your keys' budgets and their windows", TAG, "read", get_key_budgets, BUDGETS, errors=(401, 403, 404)),
    Operation("GET", "/users/{user_id}/budgets", "A user's budgets, and their keys' windows (admin)", TAG, "admin", get_user_budgets, BUDGETS, errors=(401, 403, 404)),
    Operation("PATCH", "/users/{user_id}/budgets", "Set or clear (null) a user's daily, weekly and monthly caps (admin)", TAG, "admin", set_user_budgets, BUDGETS, body=SET_CAPS, errors=E),
    Operation("PATCH", "/keys/{key_id}/budgets", "Set or clear (null) any key's caps; the key's owner cannot loosen them (admin)", TAG, "admin", set_key_budgets, BUDGETS, body=SET_CAPS, errors=E),
)
