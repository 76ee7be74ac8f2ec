"""``/api/v1/wallet``: the caller's balance, holds and ledger; and admins'
top-ups and adjustments of any user's balance, with an ``Idempotency-Key``."""

from __future__ import annotations

from typing import Any

from gateway_core.admin import credits, users
from gateway_core.admin import wallet as wallets
from gateway_core.runtime.jsonable import to_jsonable
from gateway_core.money import format_usd
from gateway_core.records import LedgerEntry
from .errors import ApiError
from .operation import ApiCall, Operation, Param
from .schema import ID, TIME, array, micros, obj, page, usd
from .shapes import AMOUNT_FIELDS, CREDIT, amount_of, credit_json, one_amount, user_json

HOLD = obj({"request_id": {"type": "string"}, "key_id": {"type": ["integer", "null"]}, "amount": usd("held"),
            "amount_micros": micros("held"), "created_at": TIME}, ("request_id", "amount", "amount_micros"))  # fmt: skip
WALLET = obj(
    {"user_id": ID, "balance": usd("balance", signed=True), "balance_micros": micros("balance", signed=True),
     "held": usd("held by requests in flight"), "held_micros": micros("held by requests in flight"), "holds": array(HOLD)},
    ("user_id", "balance", "balance_micros", "held", "held_micros", "holds"),
)  # fmt: skip
ENTRY = obj(
    {"id": ID, "kind": {"type": "string"}, "amount": usd("amount", signed=True), "amount_micros": micros("amount", signed=True),
     "balance_after": usd("balance after", signed=True), "balance_after_micros": micros("balance after", signed=True),
     "request_id": {"type": ["string", "null"]}, "key_id": {"type": ["integer", "null"]}, "note": {"type": ["string", "null"]}, "created_at": TIME},
    ("id", "kind", "amount", "amount_micros", "balance_after", "balance_after_micros", "created_at"),
    closed=False,
)  # fmt: skip
LEDGER_QUERY = (
    Param("cursor", {"type": "string", "pattern": "^[0-9]{1,18}$"}, "next_cursor of the previous page"),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "rows per page (default 50)"),
)
TOPUP = one_amount(obj({**AMOUNT_FIELDS, "note": {"type": ["string", "null"], "maxLength": 1000}}))
ADJUSTMENT = obj({**AMOUNT_FIELDS, "note": {"type": "string", "minLength": 1, "maxLength": 1000}}, ("note",))
IDEMPOTENCY = Param("idempotency-key", {"type": "string", "minLength": 1, "maxLength": 200},
                    "the same key again returns the first result and moves no money")  # fmt: skip


async def get_wallet(call: ApiCall) -> dict[str, Any]:
    user = await users.get_user(call.admin, call.user_id)
    holds = await call.admin.store.list_holds(call.user_id)
    held = sum(hold.amount_micros for hold in holds)
    return {
        "user_id": user.id, "balance": format_usd(user.balance_micros), "balance_micros": user.balance_micros,
        "held": format_usd(held), "held_micros": held,
        "holds": [{"request_id": hold.request_id, "key_id": hold.key_id, "amount": format_usd(hold.amount_micros),
                   "amount_micros": hold.amount_micros, "created_at": hold.created_at} for hold in holds],
    }  # fmt: skip


async def list_ledger(call: ApiCall) -> dict[str, Any]:
    before = int(call.query["cursor"]) if "cursor" in call.query else None
    found = await wallets.wallet(call.admin, call.user_id, before_id=before, limit=call.query.get("limit", 50))
    items = [_entry(entry) for entry in found.ledger]
    return {"items": items, "next_cursor": str(found.ledger[-1].id) if found.more and found.ledger else None}


def _entry(entry: LedgerEntry) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(entry)
    data["amount"] = format_usd(entry.amount_micros)
    data["balance_after"] = format_usd(entry.balance_after_micros)
    return data


async def _credit(call: ApiCall, kind: str) -> dict[str, Any]:
    user_id = call.path["user_id"]
    before = user_json(await users.get_user(call.admin, user_id))
    amount = amount_of(call.body)
    assert amount is not None
    if kind == "topup" and amount <= 0:
        raise ApiError(400, "amount must be positive", field="amount")
    done = await credits.credit(
        call.admin, user_id, amount, kind=kind, note=call.body.get("note"), idempotency_key=call.headers.get("idempotency-key")
    )
    data = credit_json(done)
    if not done.replayed:
        after = user_json(await users.get_user(call.admin, user_id))
        await call.audit(f"wallet.{kind}", f"user {user_id}", before, {**after, "credit": data})
    return data


async def create_topup(call: ApiCall) -> dict[str, Any]:
    return await _credit(call, "topup")


async def create_adjustment(call: ApiCall) -> dict[str, Any]:
    return await _credit(call, "adjustment")


ERRORS = (400, 401, 403, 404, 409)
OPERATIONS = (
    Operation("GET", "/wallet", "Your balance and what requests in flight hold", "wallet", "read", get_wallet, WALLET, errors=(401,)),
    Operation("GET", "/wallet/ledger", "Your ledger, newest first (cursor pages)", "wallet", "read", list_ledger, page(ENTRY), query=LEDGER_QUERY),
    Operation("POST", "/users/{user_id}/topups", "Credit a user's balance (admin; Idempotency-Key)", "wallet", "admin", create_topup, CREDIT, body=TOPUP, status=201, errors=ERRORS, headers=(IDEMPOTENCY,)),
    Operation("POST", "/users/{user_id}/adjustments", "Correct a user's balance by a signed amount, saying why (admin; Idempotency-Key)", "wallet", "admin", create_adjustment, CREDIT, body=ADJUSTMENT, status=201, errors=ERRORS, headers=(IDEMPOTENCY,)),
)
