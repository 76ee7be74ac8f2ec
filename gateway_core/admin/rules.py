"""The admin layer's rules for values every front takes: one rule each, so the
CLI, the console and the management API refuse the same input with the same
message (the field to blame, then what is expected).

- amounts: whole micro-USD, at most :data:`MAX_AMOUNT_MICROS` (a billion USD: more is
  a typo, not a payment); budgets (spending caps that reset) are amounts from 0, typed
  or sent as decimal USD (:func:`budget_micros`, :func:`parse_budget`);
- rate limits (requests and tokens per minute, requests in flight) of groups, users,
  teams and keys: whole numbers from 0 (unlimited) to :data:`MAX_RATE_LIMIT`, or none
  (:func:`check_rate_limit` for a number sent, :func:`parse_rate_limit` for text typed);
- a channel's priority (-1000000 to 1000000), weight and concurrency cap (0 to 1000000):
  whole numbers (:func:`check_channel_number`, :func:`parse_channel_number` for text typed);
- user names: 1 to 100 characters with no space or control character (they are
  typed on command lines and in sign-in forms), not starting ``team:`` (teams' wallets);
- channel base URLs: ``http://`` or ``https://``, or the scheme of the channel
  type's own address (the demo type's ``local://``);
- a channel's upstream keys: at most :data:`MAX_UPSTREAM_KEYS` of them, each at most
  :data:`MAX_UPSTREAM_KEY` characters (room for a cloud credential such as a service
  account's JSON key file, base64-encoded: about 3.2 KB; still bounded);
- a key's models: each served to the key's group by some channel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..money import MICROS_PER_USD, format_usd, not_a_decimal, parse_usd
from ..records import BUDGET_COLUMNS, LIMIT_COLUMNS
from ..team_records import ACCOUNT_PREFIX as TEAM_ACCOUNT_PREFIX
from .context import Admin
from .errors import Invalid

if TYPE_CHECKING:
    from ..channel_type import ChannelType  # the contract, which the admin commands need not import

MAX_AMOUNT_MICROS = 1_000_000_000 * MICROS_PER_USD
MAX_USER_NAME = 100
MAX_UPSTREAM_KEY = 16 * 1024
MAX_UPSTREAM_KEYS = 500
MAX_RATE_LIMIT = 2**31
CHANNEL_NUMBERS = {"priority": (-1_000_000, 1_000_000), "weight": (0, 1_000_000), "concurrency": (0, 1_000_000)}


def check_amount(micros: object, field: str, *, allow_zero: bool = False, signed: bool = False) -> int:
    """``micros`` as an amount of money (:class:`Invalid` naming ``field`` when it is
    not a whole number of micro-USD, is negative unless ``signed``, zero unless
    ``allow_zero``, or beyond :data:`MAX_AMOUNT_MICROS` either way)."""
    if isinstance(micros, bool) or not isinstance(micros, int):
        raise Invalid(f"must be a whole number of micro-USD, got {micros!r}", field)
    if micros < 0 and not signed:
        raise Invalid("must not be negative", field)
    if micros == 0 and not allow_zero:
        raise Invalid("must not be zero" if signed else "must be more than zero", field)
    if abs(micros) > MAX_AMOUNT_MICROS:
        raise Invalid(f"must be at most {format_usd(MAX_AMOUNT_MICROS)} USD, got {format_usd(micros)} USD", field)
    return micros


def check_rate_limit(value: object, field: str) -> int | None:
    """``value`` as a rate limit (``None``: none set; 0: unlimited), or :class:`Invalid` naming ``field``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RATE_LIMIT:
        raise Invalid(f"must be a whole number from 0 (unlimited) to {MAX_RATE_LIMIT}, got {value!r}", field)
    return value


def check_limits(changes: Mapping[str, object]) -> None:
    """The rate limits (:data:`~gateway_core.records.LIMIT_COLUMNS`) among a group's, a
    user's or a key's ``changes``, each by :func:`check_rate_limit`, and the budgets
    (:data:`~gateway_core.records.BUDGET_COLUMNS`, micro-USD; ``None``: no cap) by :func:`check_amount`."""
    for column in LIMIT_COLUMNS:
        if column in changes:
            check_rate_limit(changes[column], column)
    for column in BUDGET_COLUMNS:
        if changes.get(column) is not None:
            check_amount(changes[column], column, allow_zero=True)


def budget_micros(value: object, field: str) -> int:
    """A budget or a key's quota written in USD (a decimal string such as ``"12.50"``) as micro-USD, or
    :class:`Invalid` naming ``field``: not a decimal number, negative, finer than a
    micro-USD, or more than :data:`MAX_AMOUNT_MICROS`."""
    if not isinstance(value, str):
        raise Invalid(not_a_decimal(field, value).removeprefix(f"{field} "), field)
    try:
        micros = parse_usd(value)
    except ValueError as exc:  # its words name the value "amount"
        raise Invalid(str(exc).removeprefix("amount "), field) from None
    return check_amount(micros, field, allow_zero=True)


def parse_budget(text: str, field: str) -> int | None:
    """A budget typed on a command line or in a form: empty is no cap, else :func:`budget_micros`."""
    return budget_micros(text, field) if text.strip() else None


def parse_rate_limit(text: str, field: str) -> int | None:
    """A rate limit typed on a command line or in a form: empty is none set, else
    :func:`check_rate_limit` of the number (so a wrong one has the API's message)."""
    value = _typed_number(text)
    return None if value is None else check_rate_limit(value, field)


def check_channel_number(value: object, field: str) -> int:
    """``value`` as a channel's ``priority``, ``weight`` or ``concurrency`` (0: no cap;
    :data:`CHANNEL_NUMBERS`' bounds), or :class:`Invalid` naming ``field``."""
    low, high = CHANNEL_NUMBERS[field]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise Invalid(f"must be a whole number from {low}{' (no cap)' if field == 'concurrency' else ''} to {high}, got {value!r}", field)
    return value


def parse_channel_number(text: str, field: str) -> int | None:
    """A channel's priority, weight or concurrency typed on a command line or in a form:
    empty is none given, else :func:`check_channel_number` of the number."""
    value = _typed_number(text)
    return None if value is None else check_channel_number(value, field)


def _typed_number(text: str) -> object:
    """Typed text as the number it spells, the text itself when it spells none (for the
    rule to refuse in its words), ``None`` when empty."""
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        return text


def check_user_name(name: object) -> str:
    """``name`` as a user name, or :class:`Invalid`."""
    if not isinstance(name, str) or not name:
        raise Invalid("needs a name", "name")
    if len(name) > MAX_USER_NAME:
        raise Invalid(f"must be at most {MAX_USER_NAME} characters", "name")
    if any(char.isspace() or not char.isprintable() for char in name):
        raise Invalid(f"must not contain spaces or control characters, got {name!r} (letters, digits and . _ - @ suit)", "name")
    if name.startswith(TEAM_ACCOUNT_PREFIX):
        raise Invalid(f"must not start with {TEAM_ACCOUNT_PREFIX!r}: such names are teams' wallets (docs/teams.md)", "name")
    return name


def check_base_url(url: str, channel_type: ChannelType | None) -> None:
    """Refuse a base URL that is not ``http(s)://…`` (or the channel type's own
    scheme): a typo such as ``htps://`` or ``ftp://`` would only fail at the first
    request."""
    if "://" not in url:
        raise Invalid(f"must be a URL like https://api.example.com, got {url!r}", "base_url")
    own = channel_type.normalize_base_url("") if channel_type is not None else ""
    allowed = {"http", "https"} | ({urlsplit(own).scheme} if "://" in own else set())
    if urlsplit(url).scheme.lower() not in allowed:
        schemes = " or ".join(f"{scheme}://" for scheme in sorted(allowed))
        raise Invalid(f"must start with {schemes}, got {url[:80]!r}", "base_url")


def check_upstream_keys(keys: list[str]) -> None:
    """Refuse more than :data:`MAX_UPSTREAM_KEYS` upstream keys, or one longer than
    :data:`MAX_UPSTREAM_KEY` characters (named by its position, never quoted)."""
    if len(keys) > MAX_UPSTREAM_KEYS:
        raise Invalid(f"must be at most {MAX_UPSTREAM_KEYS} keys, got {len(keys)}", "api_keys")
    for position, key in enumerate(keys):
        if len(key) > MAX_UPSTREAM_KEY:
            raise Invalid(f"key #{position} is {len(key)} characters long: at most {MAX_UPSTREAM_KEY} are taken", "api_keys")


async def check_models_served(admin: Admin, models: Iterable[str], group: str, *, already: Iterable[str] = ()) -> None:
    """Refuse a model (other than those in ``already``, a key's before a change) that
    no channel serves to ``group``: a key restricted to a misspelt model, or to one
    its group cannot reach, could call nothing."""
    kept = set(already)
    wanted = [model for model in dict.fromkeys(models) if model not in kept]
    if not wanted:
        return
    served: set[str] = set()
    for channel in await admin.store.list_channels():
        if group in channel.groups:
            served.update(channel.models)
    unknown = [model for model in wanted if model not in served]
    if unknown:
        listed = ", ".join(sorted(served)) or "none yet"
        raise Invalid(f"names model(s) no channel serves to the group {group!r}: {', '.join(unknown)} (its models: {listed})", "models")
