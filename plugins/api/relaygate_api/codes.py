"""``/api/v1/codes`` (admin): batches of redemption codes, created with the plain
codes in the answer only, listed and disabled; and ``/api/v1/wallet/redeem``: a
user credits a code to their own wallet (attempts throttled per user and per
address, across workers and replicas with Redis)."""

from __future__ import annotations

import time
from typing import Any

from gateway_core.admin import codes, users
from gateway_core.admin.codes import RedeemRefused
from gateway_core.billing.codes import RedemptionCode
from gateway_core.money import format_usd
from .errors import ApiError
from .operation import ApiCall, Operation, Param
from .schema import ID, NAME, TIME, TIME_OR_NULL, array, micros, obj, usd
from .shapes import EXPIRES, amount_of, one_amount, parse_expires, user_json

STATES = ["open", "used", "disabled", "expired"]
CODE = obj(
    {"id": ID, "batch": {"type": "string"}, "prefix": {"type": "string", "description": "the code's first characters, for people"},
     "value": usd("credited"), "value_micros": micros("credited"), "group": {"type": ["string", "null"]},
     "state": {"enum": STATES}, "expires_at": TIME_OR_NULL, "note": {"type": ["string", "null"]}, "enabled": {"type": "boolean"},
     "created_at": TIME, "redeemed_by": {"type": ["string", "null"]}, "redeemed_at": TIME_OR_NULL},
    ("id", "batch", "prefix", "value", "value_micros", "state", "enabled", "created_at"),
)  # fmt: skip
CREATE = one_amount(obj(
    {"count": {"type": "integer", "minimum": 1, "maximum": codes.MAX_BATCH}, "value": usd("each code credits"),
     "value_micros": micros("each code credits"), "expires_at": EXPIRES, "group": {**NAME, "type": ["string", "null"]},
     "note": {"type": ["string", "null"], "maxLength": 1000}},
    ("count",),
), "value")  # fmt: skip
CREATED = obj(
    {"batch": {"type": "string"}, "codes": array(obj({"id": ID, "code": {"type": "string", "description": "shown only in this response"}}, ("id", "code")))},
    ("batch", "codes"),
)  # fmt: skip
QUERY = (
    Param("batch", {"type": "string", "minLength": 1, "maxLength": 100}, "only this batch's codes"),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": codes.MAX_BATCH}, "codes, newest first (default 1000)"),
)
REDEEM = obj({"code": {"type": "string", "minLength": 1, "maxLength": 100}}, ("code",))
REDEEMED = obj(
    {"code_id": ID, "value": usd("credited"), "value_micros": micros("credited"), "balance": usd("balance after", signed=True),
     "balance_micros": micros("balance after", signed=True), "group": {"type": ["string", "null"], "description": "the group the code opened"}},
    ("code_id", "value", "value_micros", "balance", "balance_micros", "group"),
)  # fmt: skip
# why a code was refused, as the API answers it
REFUSED_STATUS = {"wrong": 400, "used": 409, "expired": 409, "disabled": 409, "throttled": 429}


def code_json(code: RedemptionCode, now: float) -> dict[str, Any]:
    return {
        "id": code.id, "batch": code.batch, "prefix": code.prefix, "value": format_usd(code.value_micros),
        "value_micros": code.value_micros, "group": code.group, "state": code.state(now), "expires_at": code.expires_at,
        "note": code.note, "enabled": code.enabled, "created_at": code.created_at, "redeemed_by": code.redeemed_by,
        "redeemed_at": code.redeemed_at,
    }  # fmt: skip


async def create_codes(call: ApiCall) -> dict[str, Any]:
    body = call.body
    value = amount_of(body, "value")
    assert value is not None
    batch = codes.new_batch()
    created = await codes.create_codes(
        call.admin, count=body["count"], value_micros=value, expires_at=parse_expires(body.get("expires_at")),
        group=body.get("group"), note=body.get("note"), batch=batch,
    )  # fmt: skip
    summary = {"batch": batch, "count": len(created), "ids": [code_id for code_id, _ in created], "value": format_usd(value),
               "value_micros": value, "group": body.get("group"), "expires_at": body.get("expires_at"), "note": body.get("note")}  # fmt: skip
    await call.audit("code.create", f"codes {batch}", None, summary)  # never the codes themselves
    return {"batch": batch, "codes": [{"id": code_id, "code": code} for code_id, code in created]}


async def list_codes(call: ApiCall) -> list[dict[str, Any]]:
    found = await codes.list_codes(call.admin, batch=call.query.get("batch"), limit=call.query.get("limit", 1000))
    now = time.time()
    return [code_json(code, now) for code in found]


async def disable_code(call: ApiCall) -> None:
    code_id = call.path["code_id"]
    await codes.disable_code(call.admin, code_id)
    await call.audit("code.disable", f"code {code_id}", {"enabled": True}, {"enabled": False})


async def redeem_code(call: ApiCall) -> dict[str, Any]:
    before = user_json(await users.get_user(call.admin, call.user_id))
    throttle = call.services.redeem if call.services is not None else None
    try:
        done = await codes.redeem_code(call.admin, call.user_id, call.body["code"], address=call.address, throttle=throttle)
    except RedeemRefused as refused:
        status = REFUSED_STATUS.get(refused.reason, 409)
        raise ApiError(
            status, refused.message, code=f"code_{refused.reason}", field="code" if status == 400 else None, retry_after=refused.retry_after
        ) from None
    data = {"code_id": done.code_id, "value": format_usd(done.value_micros), "value_micros": done.value_micros,
            "balance": format_usd(done.balance_micros), "balance_micros": done.balance_micros, "group": done.group}  # fmt: skip
    after = user_json(await users.get_user(call.admin, call.user_id))
    await call.audit("wallet.redeem", f"user {call.user_id}", before, {**after, "redemption": data})
    return data


TAG = "codes"
OPERATIONS = (
    Operation("POST", "/codes", "Create a batch of redemption codes; the codes are in this response only (admin)", TAG, "admin", create_codes, CREATED, body=CREATE, status=201),
    Operation("GET", "/codes", "List redemption codes, newest first: never the codes themselves (admin)", TAG, "admin", list_codes, array(CODE), query=QUERY),
    Operation("POST", "/codes/{code_id}/disable", "Disable a redemption code (one already redeemed stays so) (admin)", TAG, "admin", disable_code, None, status=204, errors=(401, 403, 404)),
    Operation("POST", "/wallet/redeem", "Credit a redemption code to your wallet (wrong: 400, used, expired or disabled: 409, too many attempts: 429)", "wallet", "write", redeem_code, REDEEMED, body=REDEEM, errors=(400, 401, 403, 409, 429)),
)
