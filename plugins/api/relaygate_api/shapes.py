"""Records as the management API's JSON, with their schemas: money as a
decimal USD string beside its integer micro-USD field, times as Unix seconds."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from gateway_core.store.access_records import AccessTokenRecord, AuditEntry, Credit
from gateway_core.runtime.jsonable import to_jsonable
from gateway_core.money import MAX_MICROS, format_usd, parse_usd
from gateway_core.records import KeyRecord, UserRecord
from .errors import ApiError
from .schema import ID, NAMES, TIME, TIME_OR_NULL, Schema, micros, obj, usd

LIMITS = obj({name: {"type": "integer", "minimum": 0} for name in ("requests_per_minute", "tokens_per_minute", "concurrency")}, closed=False)

KEY = obj(
    {
        "id": ID, "name": {"type": "string"}, "user_id": ID, "user_name": {"type": "string"}, "group": {"type": "string"},
        "prefix": {"type": "string"}, "enabled": {"type": "boolean"}, "deleted": {"type": "boolean"},
        "expires_at": TIME_OR_NULL, "quota": usd("most the key may spend", nullable=True),
        "quota_micros": micros("most the key may spend", nullable=True), "used": usd("spent"), "used_micros": micros("spent"),
        "models": NAMES, "allow_ips": NAMES, "created_at": TIME, "last_used_at": TIME_OR_NULL, "limits": LIMITS,
    },
    ("id", "name", "user_id", "group", "prefix", "enabled", "quota", "quota_micros", "used", "used_micros"),
    closed=False,
)  # fmt: skip
NEW_KEY = obj({"key": KEY, "secret": {"type": "string", "description": "sk-…: shown only in this response"}}, ("key", "secret"))

TOKEN = obj(
    {
        "id": ID, "user_id": ID, "user_name": {"type": "string"}, "name": {"type": "string"},
        "scope": {"enum": ["read", "write", "admin"]}, "prefix": {"type": "string"}, "created_at": TIME,
        "expires_at": TIME_OR_NULL, "revoked_at": TIME_OR_NULL, "last_used_at": TIME_OR_NULL,
    },
    ("id", "user_id", "name", "scope", "prefix", "created_at", "expires_at", "revoked_at"),
    closed=False,
)  # fmt: skip
NEW_TOKEN = obj({"id": ID, "token": {"type": "string", "description": "rgt-…: shown only in this response"}, "record": TOKEN}, ("id", "token"))

USER = obj(
    {
        "id": ID, "name": {"type": "string"}, "is_admin": {"type": "boolean"}, "enabled": {"type": "boolean"},
        "balance": usd("balance", signed=True), "balance_micros": micros("balance", signed=True), "groups": NAMES,
        "deleted": {"type": "boolean", "description": "deleted users keep their name, balance, ledger and usage rows"},
    },
    ("id", "name", "is_admin", "enabled", "balance", "balance_micros", "groups"),
    closed=False,
)  # fmt: skip

CREDIT = obj(
    {
        "ledger_id": ID, "user_id": ID, "kind": {"enum": ["topup", "adjustment"]}, "amount": usd("amount", signed=True),
        "amount_micros": micros("amount", signed=True), "balance_after": usd("balance after", signed=True),
        "balance_after_micros": micros("balance after", signed=True), "note": {"type": ["string", "null"]},
        "idempotency_key": {"type": ["string", "null"]}, "created_at": TIME,
        "replayed": {"type": "boolean", "description": "true: recorded earlier under this idempotency key; nothing moved now"},
    },
    ("ledger_id", "user_id", "kind", "amount", "amount_micros", "balance_after", "balance_after_micros", "replayed"),
)  # fmt: skip

AUDIT = obj(
    {
        "id": ID, "created_at": TIME, "via": {"enum": ["token", "session", "cli"]}, "user_id": {"type": ["integer", "null"]},
        "user_name": {"type": ["string", "null"]}, "token_id": {"type": ["integer", "null"]},
        "request_id": {"type": ["string", "null"]}, "action": {"type": "string"}, "target": {"type": "string"},
        "before": {"type": ["object", "null"]}, "after": {"type": ["object", "null"]},
    },
    ("id", "created_at", "via", "action", "target", "before", "after"),
)  # fmt: skip

EXPIRES = {"type": ["string", "null"], "maxLength": 64, "description": "ISO 8601 date or time (UTC without an offset), or null: never"}
AMOUNT_FIELDS: dict[str, Schema] = {
    "amount": usd("the amount", signed=True),
    "amount_micros": micros("the amount", signed=True),
}


def one_amount(schema: Schema, field: str = "amount") -> Schema:
    """``schema`` saying that a body takes exactly one of ``field`` and ``field_micros``
    (as :func:`amount_of` requires), so schema-driven clients send a valid body."""
    return {**schema, "oneOf": [{"required": [field]}, {"required": [f"{field}_micros"]}]}


def money(micros_value: int | None) -> str | None:
    return None if micros_value is None else format_usd(micros_value)


def key_json(key: KeyRecord) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(key)
    data.pop("user_enabled", None)
    data.pop("user_limits", None)
    data["quota"] = money(key.quota_micros)
    data["used"] = money(key.used_micros)
    return data


def token_json(token: AccessTokenRecord) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(token)
    data.pop("user_enabled", None)
    data.pop("user_is_admin", None)
    return data


def user_json(user: UserRecord) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(user)
    data["balance"] = format_usd(user.balance_micros)
    return data


def credit_json(credit: Credit) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(credit)
    data["amount"] = format_usd(credit.amount_micros)
    data["balance_after"] = format_usd(credit.balance_after_micros)
    return data


def audit_json(entry: AuditEntry) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(entry)
    return data


def parse_expires(value: str | None, field: str = "expires_at") -> float | None:
    """An ISO 8601 date or time in the future (UTC when it has no offset), as Unix seconds."""
    if value is None:
        return None
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ApiError(400, f"{field} must be an ISO 8601 date or time like 2026-12-31T18:00:00Z", field=field) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    try:
        seconds = when.timestamp()
    except (OverflowError, ValueError):
        raise ApiError(400, f"{field} is out of range", field=field) from None
    if seconds <= time.time():
        raise ApiError(400, f"{field} must be in the future", field=field)
    return seconds


def amount_of(body: dict[str, Any], field: str = "amount", *, allow_none: bool = False) -> int | None:
    """Integer micro-USD from ``amount`` (a decimal USD string) or ``amount_micros``: exactly one of them."""
    text, exact = body.get(field), body.get(f"{field}_micros")
    if text is None and exact is None:
        if allow_none:
            return None
        raise ApiError(400, f"{field} (USD) or {field}_micros is required", field=field)
    if text is not None and exact is not None:
        raise ApiError(400, f"send {field} or {field}_micros, not both", field=field)
    if exact is not None:
        return int(exact)
    text = str(text)
    negative = text.startswith("-")
    try:
        value = parse_usd(text.removeprefix("-"))
    except ValueError as exc:
        raise ApiError(400, str(exc), field=field) from None
    if value > MAX_MICROS:
        raise ApiError(400, f"{field} is too large", field=field)
    return -value if negative else value
