"""Rows of the store as values the rest of the gateway reads. Money is an integer number
of micro-USD (``*_micros``); times are Unix seconds as floats. Only
:mod:`gateway_core.store` builds these from the database."""

from __future__ import annotations

import hashlib
from typing import Any

import attrs


@attrs.frozen
class UserRecord:
    id: int
    name: str
    is_admin: bool
    enabled: bool
    balance_micros: int
    groups: tuple[str, ...]
    deleted: bool = False  # deleted users keep their name, ledger and usage rows (docs/operations.md)


@attrs.frozen
class RateLimits:
    """Rate limits of one subject (an API key, a user): ``0`` means unlimited.

    ``requests_per_minute`` and ``tokens_per_minute`` refill continuously (a
    token bucket holding one minute's worth); ``concurrency`` caps the requests
    in flight at once.
    """

    requests_per_minute: int = 0
    tokens_per_minute: int = 0
    concurrency: int = 0

    @classmethod
    def of(cls, rpm: int | None, tpm: int | None, concurrency: int | None) -> RateLimits:
        """Limits from stored columns (``None`` or ``0``: unlimited); :data:`NO_LIMITS` when all are."""
        if not (rpm or tpm or concurrency):
            return NO_LIMITS
        return cls(max(0, rpm or 0), max(0, tpm or 0), max(0, concurrency or 0))


NO_LIMITS = RateLimits()
LIMIT_COLUMNS = ("rpm", "tpm", "concurrency")  # how groups, users and keys store their limits
BUDGET_COLUMNS = ("daily_budget_micros", "weekly_budget_micros", "monthly_budget_micros")  # users' and keys' spending caps


def _limits(value: RateLimits | None) -> RateLimits:
    """Every all-unlimited value is :data:`NO_LIMITS`, so the hot path tests identity."""
    if value is None or not (value.requests_per_minute or value.tokens_per_minute or value.concurrency):
        return NO_LIMITS
    return value


@attrs.frozen
class Budgets:
    """Spending caps of a key or a user, in micro-USD per day, week and month (``None``: none)."""

    daily: int | None = None
    weekly: int | None = None
    monthly: int | None = None

    def items(self) -> list[tuple[str, int]]:
        """``(period, cap)`` of the caps set."""
        return [(period, cap) for period, cap in (("daily", self.daily), ("weekly", self.weekly), ("monthly", self.monthly)) if cap is not None]


NO_BUDGETS = Budgets()


@attrs.frozen
class KeyRecord:
    """An API key as the request path sees it (its owner folded in)."""

    id: int
    name: str
    user_id: int
    user_name: str
    user_enabled: bool
    group: str
    prefix: str
    enabled: bool
    deleted: bool
    expires_at: float | None
    quota_micros: int | None
    used_micros: int
    models: tuple[str, ...]  # empty: any model of the group
    allow_ips: tuple[str, ...]  # empty: any address
    created_at: float
    last_used_at: float | None
    # the key's own rate limits, and its owner's (the user's override, else its group's defaults)
    limits: RateLimits = attrs.field(default=NO_LIMITS, converter=_limits)
    user_limits: RateLimits = attrs.field(default=NO_LIMITS, converter=_limits)
    # spending caps of the key and of its user (budgets that reset)
    budgets: Budgets = NO_BUDGETS
    user_budgets: Budgets = NO_BUDGETS
    cost_header: bool = False  # answers carry x-relaygate-cost-usd
    team_id: int | None = None  # the team whose wallet pays (user_id is then its account: docs/teams.md)
    member_id: int | None = None  # the member a team key belongs to (None: a service key, or not a team's)


@attrs.frozen
class DisabledKey:
    """An upstream key the gateway stopped using (the upstream refused it).

    ``fingerprint`` (see :func:`key_fingerprint`) names the key, so the mark
    follows the key when the list is edited; ``index`` is its position when it
    was disabled, for people."""

    index: int
    fingerprint: str
    reason: str
    at: float


def key_fingerprint(secret: str) -> str:
    """A short one-way name of an upstream key (16 hex digits of its SHA-256)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()[:16]


@attrs.frozen
class ChannelRecord:
    """An upstream channel. ``api_keys`` are the upstream secrets: never log them.

    ``timeout_*`` override the gateway's ``[gateway.timeouts]`` (``None``: the
    default); ``concurrency`` caps this channel's requests in flight per worker
    (``0``: no cap); ``disabled_keys`` are the keys the upstream refused."""

    id: int
    name: str
    type: str
    base_url: str
    api_keys: tuple[str, ...] = attrs.field(repr=False)
    models: tuple[str, ...]
    model_map: dict[str, str]
    groups: tuple[str, ...]
    priority: int = 0
    weight: int = 1
    enabled: bool = True
    endpoints: tuple[str, ...] = ()  # empty: every endpoint the type serves
    headers: dict[str, str] = attrs.field(factory=dict, repr=False)
    settings: dict[str, Any] = attrs.field(factory=dict)
    concurrency: int = 0
    timeout_connect: float | None = None
    timeout_first_byte: float | None = None
    timeout_idle: float | None = None
    disabled_keys: tuple[DisabledKey, ...] = ()

    def upstream_model(self, model: str) -> str:
        return self.model_map.get(model, model)

    def masked_keys(self) -> tuple[str, ...]:
        return tuple(mask_secret(k) for k in self.api_keys)

    def key_disabled(self, secret: str) -> DisabledKey | None:
        """Why the key ``secret`` is disabled, or ``None`` when it is usable."""
        if not self.disabled_keys:
            return None
        fingerprint = key_fingerprint(secret)
        return next((d for d in self.disabled_keys if d.fingerprint == fingerprint), None)


def mask_secret(secret: str) -> str:
    """A form of a secret safe to show: its first and last few characters."""
    if len(secret) <= 10:
        return "…" * min(len(secret), 3)
    return f"{secret[:4]}…{secret[-4:]}"


@attrs.frozen
class UsageRow:
    """One request, as the usage log stores it: built whole when the request ends
    (:func:`gateway_core.request.settlement.usage_row`)."""

    request_id: str
    started_at: float
    protocol: str
    endpoint: str
    client_ip: str | None = None
    client_request_id: str | None = None
    user_id: int | None = None
    key_id: int | None = None
    key_name: str | None = None
    model: str | None = None
    upstream_model: str | None = None
    channel_id: int | None = None
    channel_name: str | None = None
    stream: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_micros: int = 0
    held_micros: int = 0  # what was reserved before the upstream call
    overrun_micros: int = 0  # how much the cost exceeded the reservation
    estimated: bool = False
    duration_ms: float = 0.0
    first_token_ms: float | None = None
    status: int = 0
    end_reason: str | None = None  # done, client_gone, write_timeout, upstream_error, timeout
    error_type: str | None = None
    error_message: str | None = None
    upstream_status: int | None = None
    upstream_error: str | None = None
    attempts: list[dict[str, Any]] = attrs.field(factory=list)
    cost_detail: dict[str, Any] | None = None  # the cost by component (billing.cost.CostBreakdown.as_dict)
    served_model: str | None = None  # the model that served it, when a model fallback did (gateway_core.routing.fallbacks)
    team_id: int | None = None  # the team charged (its key's)


@attrs.frozen
class PriceRecord:
    """What a model costs, in integer micro-USD per million tokens.

    ``cached_input`` and ``cache_write`` prices are ``None`` when the model has
    none (the input price applies). A ``free`` model costs nothing.
    """

    model: str
    input_micros_per_mtok: int
    output_micros_per_mtok: int
    cached_input_micros_per_mtok: int | None = None
    cache_write_micros_per_mtok: int | None = None
    free: bool = False
    updated_at: float | None = None
    # calls that are not token-priced (images, speech, transcription)
    per_image_micros: int | None = None
    per_mchar_micros: int | None = None  # per million characters
    per_audio_minute_micros: int | None = None
    # second-round prices (billing.md#prices): a fixed price per request; reasoning
    # output at its own price (None: the output price); an hour-long cache write
    # (None: the cache-write price); above ``tier_threshold_tokens`` input tokens,
    # the input and output prices of the tier (long context)
    per_request_micros: int | None = None
    reasoning_micros_per_mtok: int | None = None
    cache_write_1h_micros_per_mtok: int | None = None
    tier_threshold_tokens: int | None = None
    tier_input_micros_per_mtok: int | None = None
    tier_output_micros_per_mtok: int | None = None
    source: str = "operator"  # or "catalogue": the list price of a model not priced (billing/catalogue.py)


# --- what the admin port reads and writes (gateway_core.admin.port) --------------------


@attrs.frozen
class UserOverview:
    """A user as operators list them: with how many live keys it has and
    whether it can sign in to the console."""

    user: UserRecord
    keys: int
    has_password: bool
    created_at: float | None = None


DEFAULT_GROUP = "default"  # the group new users and channels are in unless told otherwise


@attrs.frozen
class GroupRecord:
    """A group: its price ratio (parts per million, 1,000,000 = ×1), its default
    rate limits (``None``: not set, ``0``: unlimited), its members and live keys."""

    name: str
    ratio_ppm: int
    created_at: float | None = None
    rpm: int | None = None
    tpm: int | None = None
    concurrency: int | None = None
    members: int = 0
    keys: int = 0


@attrs.frozen
class LedgerEntry:
    """One row of a user's append-only ledger: ``amount_micros`` is what it did
    to the balance, ``balance_after_micros`` the balance after it."""

    id: int
    user_id: int
    kind: str  # topup, hold, capture, release, refund, adjustment
    amount_micros: int
    balance_after_micros: int
    request_id: str | None
    key_id: int | None
    note: str | None
    created_at: float


@attrs.frozen
class HoldRecord:
    """An open reservation of a request in flight."""

    request_id: str
    user_id: int
    key_id: int | None
    amount_micros: int
    created_at: float


@attrs.frozen
class Problem:
    """One broken money invariant: what it concerns, what was expected and what was found."""

    subject: str  # "user 'alice' (id 3)", "key 7 ('ci')", "ledger row 41"
    check: str  # balance, chain, key_used, key_held, holds, team_key, team_wallet
    expected: int
    found: int
    message: str


@attrs.frozen
class AuditReport:
    """The money invariants checked against the database (``relaygate check``)."""

    users: int
    keys: int
    ledger_rows: int
    open_holds: int
    held_micros: int
    oldest_hold_age: float | None  # seconds
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


@attrs.frozen
class UsageFilter:
    """Which usage-log rows a page shows: every given filter must match.

    ``status`` is one HTTP status; ``errors`` keeps statuses of 400 and above;
    ``since`` keeps rows created at or after that Unix time, ``until`` before it.
    """

    key_id: int | None = None
    user_id: int | None = None
    model: str | None = None
    status: int | None = None
    errors: bool = False
    since: float | None = None
    until: float | None = None
    team_id: int | None = None


Cursor = tuple[float, int]  # a usage row's (created_at, id): where a keyset page starts


@attrs.frozen
class DailySpending:
    """Cost and requests of one UTC day (``YYYY-MM-DD``) and model."""

    day: str
    model: str
    cost_micros: int
    requests: int
    errors: int


@attrs.frozen
class UsageTotal:
    """Totals of the usage log for one model, user or channel (``label``)."""

    label: str | None
    requests: int
    input_tokens: int
    output_tokens: int
    cost_micros: int
    errors: int


@attrs.frozen
class ChannelTraffic:
    """One channel's requests over a window: errors, mean latency, the last error."""

    channel_id: int
    requests: int
    errors: int
    mean_ms: float | None
    last_at: float | None
    last_error: str | None = None
    last_error_at: float | None = None


@attrs.frozen
class InitResult:
    """What ``relaygate init`` found or created: the admin, and what is new."""

    admin: UserRecord
    admin_created: bool
    channel_created: bool
    key_id: int | None  # the new key's id, when one was created
    secret: str | None = attrs.field(repr=False)  # the new key's secret, shown once
    channels: int = 0
    admin_keys: int = 0

