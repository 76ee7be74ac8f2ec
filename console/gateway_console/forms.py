"""Reading form posts and turning their text into values, and values into text.

Forms are ``application/x-www-form-urlencoded`` (no file uploads), parsed here
with the standard library so the console needs no multipart parser.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request

from gateway_core.admin.rules import parse_budget
from gateway_core.money import parse_usd
from gateway_core.records import BUDGET_COLUMNS
from gateway_core.money import show_usd as show_money_text

from .i18n import _

MAX_FORM_BYTES = 64 * 1024
_SPLIT = re.compile(r"[\s,]+")


class FormError(ValueError):
    """A form value that cannot be used; the message is shown next to the form."""


class FormTooLarge(Exception):
    pass


async def read_form(request: Request) -> FormData:
    """The posted fields (an empty form for anything but an urlencoded body)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        raise FormTooLarge()
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormTooLarge()
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return FormData()
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=500)
    except (UnicodeDecodeError, ValueError):
        raise FormError(_("the form could not be read")) from None
    fields: list[tuple[str, str | UploadFile]] = list(pairs)
    return FormData(fields)


def text(form: FormData, name: str, *, required: str | None = None, max_length: int = 500, label: str | None = None) -> str:
    """A field's text, stripped; too long a value is refused (never cut), named by ``label``."""
    value = str(form.get(name) or "").strip()
    if required and not value:
        raise FormError(required)
    if len(value) > max_length:
        what = label or name.replace("_", " ").capitalize()
        raise FormError(_("%(what)s is too long: %(length)s characters, %(most)s at most.", what=what, length=f"{len(value):,}", most=f"{max_length:,}"))
    return value


def in_own_words(what: str, message: str, generic: str) -> str:
    """``"Amount"``, ``"amount must not be negative"`` → ``"Amount must not be negative"``:
    a message that starts with a generic name of the value says ``what`` instead of repeating it."""
    if message.startswith(generic + " "):
        return what + message[len(generic) :]
    return f"{what}: {message}"


def split_list(value: str) -> list[str]:
    """``"a, b\\nc"`` → ``["a", "b", "c"]`` (commas, spaces or new lines)."""
    return [item for item in dict.fromkeys(_SPLIT.split(value.strip())) if item]


def optional_usd(value: str, what: str) -> int | None:
    value = value.strip().lstrip("$").strip()
    if not value:
        return None
    try:
        return parse_usd(value)
    except ValueError as exc:
        raise FormError(in_own_words(what, str(exc), "amount")) from None


def budget_changes(form: FormData) -> dict[str, int | None]:
    """The ``daily``, ``weekly`` and ``monthly`` caps typed in USD (empty: none), as budget
    columns, read by the admin layer's rule: a wrong one has the CLI's and the API's message."""
    periods = ("daily", "weekly", "monthly")  # in the order of BUDGET_COLUMNS
    return {column: parse_budget(text(form, period, max_length=40).lstrip("$").strip(), period) for period, column in zip(periods, BUDGET_COLUMNS)}


def optional_int(value: str, what: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    if not value.isdigit():
        raise FormError(_("%(what)s must be a whole number (0 or more)", what=what))
    return int(value)


def optional_float(value: str, what: str) -> float | None:
    value = value.strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise FormError(_("%(what)s must be a number (like 30 or 2.5)", what=what)) from None


def future_time(value: str, what: str, *, kept: float | None = None) -> float | None:
    """Like :func:`when`, but a time already past is refused (``kept``, the stored
    value shown in the form unchanged, is let through: an edit of something else)."""
    moment = when(value, what)
    if moment is None or moment > time.time() or (kept is not None and abs(moment - kept) < 60):
        return moment
    raise FormError(_("%(what)s %(time)s UTC is in the past: choose a later time, or leave it empty for none.", what=what, time=show_time(moment)))


def when(value: str, what: str) -> float | None:
    """A time from a ``datetime-local`` field or ISO 8601 text; without a zone it is UTC."""
    value = value.strip()
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise FormError(_("%(what)s: not a date and time like 2026-01-31T18:00", what=what)) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def model_map(value: str) -> dict[str, str]:
    """``client=upstream, other=name`` → a mapping."""
    mapping: dict[str, str] = {}
    for item in split_list(value):
        client, sep, upstream = item.partition("=")
        if not sep or not client or not upstream:
            raise FormError(_("model map entries look like client-model=upstream-model, got %(item)s", item=repr(item)))
        mapping[client] = upstream
    return mapping


# --- values to text (template filters) ----------------------------------------------


def show_usd(micros: Any) -> str:
    """Every amount on every page (the ``usd`` and ``money`` filters): exact to the
    micro-USD, with thousands separators (:func:`gateway_core.money.show_usd`)."""
    return show_money_text(int(micros or 0))


def show_time(ts: Any) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%S")


def input_time(ts: Any) -> str:
    """A time as a ``datetime-local`` field's value (UTC)."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%dT%H:%M")


def show_ms(ms: Any) -> str:
    if ms is None:
        return "—"
    ms = float(ms)
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def show_int(value: Any) -> str:
    return f"{int(value or 0):,}"


FILTERS = {"usd": show_usd, "money": show_usd, "when": show_time, "input_time": input_time, "ms": show_ms, "num": show_int}
