"""Channels: the upstreams requests are routed to.

Adding and editing validate the fields against the loaded channel types (the
base URL is stored as the type normalizes it; the settings against the type's
schema, stored typed, and checked again when the type changes; a channel whose
type is not loaded keeps its stored settings untouched), create missing groups,
and keep the disabled marks of the upstream keys an edit keeps. Enabling a channel also
puts its disabled upstream keys back in use. Every change is seen by the
running gateway's router at once (``caches``), by other processes within a second.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .. import endpoints
from ..channel_settings import CORE_SETTINGS, SettingError, validate_settings
from ..routing.health_report import describe_health
from ..records import ChannelRecord, ChannelTraffic, DisabledKey
from ..store.request_store import BreakerReport
from .context import Admin
from .errors import Conflict, Invalid, NotFound
from .rules import CHANNEL_NUMBERS, check_base_url, check_channel_number, check_upstream_keys
from .port import ChannelFields

if TYPE_CHECKING:  # the probe, aiohttp and the channel-type contract load when used, not for every admin command
    import aiohttp

    from ..channel_type import ChannelType, Timeouts

    from ..routing.probe import ProbeResult as ProbeResult  # what test_channel returns, for the fronts

EDITABLE = (
    "name", "type", "base_url", "api_keys", "models", "model_map", "groups", "priority", "weight", "enabled",
    "endpoints", "headers", "settings", "concurrency", "timeout_connect", "timeout_first_byte", "timeout_idle",
)  # fmt: skip
LISTS = ("api_keys", "models", "groups", "endpoints")
TIMEOUTS = ("timeout_connect", "timeout_first_byte", "timeout_idle")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token


@attrs.frozen
class ChannelStatus:
    """A channel with its health as people read it (see :func:`gateway_core.routing.health_report.describe_health`)."""

    channel: ChannelRecord
    health: dict[str, Any]


async def add_channel(admin: Admin, fields: ChannelFields) -> ChannelRecord:
    """Add a channel: ``name``, ``type``, ``base_url`` and ``models`` are required;
    the other fields of :class:`ChannelRecord` have their defaults (groups: ``default``)."""
    checked = check_fields(admin, {"groups": ["default"], **fields}, None)
    try:
        channel = await admin.store.add_channel(checked)
    except Conflict:
        raise Conflict(f"channel {checked['name']!r} already exists") from None
    admin.caches.channels_changed()
    return channel


async def find_channel(admin: Admin, name: str) -> ChannelRecord:
    channel = await admin.store.find_channel(name)
    if channel is None:
        raise NotFound(f"no channel named {name!r}")
    return channel


async def get_channel(admin: Admin, channel_id: int) -> ChannelRecord:
    channel = await admin.store.get_channel(channel_id)
    if channel is None:
        raise NotFound(f"no channel with id {channel_id}")
    return channel


async def list_channels(admin: Admin) -> list[ChannelRecord]:
    return await admin.store.list_channels()


async def update_channel(admin: Admin, channel_id: int, changes: ChannelFields) -> ChannelRecord:
    """Change the given fields (``api_keys`` replaces the upstream keys)."""
    if not changes:
        raise Invalid("nothing to change: give at least one field")
    existing = await get_channel(admin, channel_id)
    checked = check_fields(admin, changes, existing)
    try:
        channel = await admin.store.update_channel(channel_id, checked)
    except Conflict:
        raise Conflict(f"channel {checked.get('name')!r} already exists") from None
    if channel is None:
        raise NotFound(f"no channel with id {channel_id}")
    admin.caches.channels_changed()
    return channel


async def reseal_keys(admin: Admin) -> int:
    """Write every channel's upstream keys again, so the store seals them under the
    current secret key (``relaygate rotate-secrets``); the number of channels."""
    count = 0
    for channel in await admin.store.list_channels():
        if channel.api_keys:
            await admin.store.update_channel(channel.id, {"api_keys": list(channel.api_keys)})
            count += 1
    admin.caches.channels_changed()
    return count


async def enable_channel(admin: Admin, channel_id: int) -> tuple[ChannelRecord, list[DisabledKey]]:
    """Route to the channel again and use its disabled upstream keys again; the
    channel and the marks removed (each key's position and why it was disabled)."""
    restored = await admin.store.enable_channel(channel_id)
    if restored is None:
        raise NotFound(f"no channel with id {channel_id}")
    admin.caches.channels_changed()
    return await get_channel(admin, channel_id), restored


async def disable_channel(admin: Admin, channel_id: int) -> ChannelRecord:
    """Stop routing to the channel."""
    if not await admin.store.disable_channel(channel_id):
        raise NotFound(f"no channel with id {channel_id}")
    admin.caches.channels_changed()
    return await get_channel(admin, channel_id)


async def delete_channel(admin: Admin, channel_id: int) -> ChannelRecord:
    """Remove the channel and its breaker states; the channel as it was."""
    channel = await get_channel(admin, channel_id)
    if not await admin.store.delete_channel(channel_id):
        raise NotFound(f"no channel with id {channel_id}")
    admin.caches.channels_changed()
    return channel


async def test_channel(
    admin: Admin,
    channel_id: int,
    *,
    timeouts: Timeouts,
    request_id: str,
    model: str | None = None,
    key_index: int | None = None,
    session: aiohttp.ClientSession | None = None,
) -> tuple[ChannelRecord, ProbeResult]:
    """Send one small real request through a channel (``relaygate channel test``, the
    console's Test button): its status and latency. ``session`` is the running
    gateway's upstream session; without one (the CLI) a session is opened for it."""
    import aiohttp

    from ..routing.probe import probe_channel

    channel = await get_channel(admin, channel_id)
    channel_type = admin.channel_types.get(channel.type)
    if session is not None:
        result = await probe_channel(
            channel_type, session, channel, timeouts=timeouts, request_id=request_id, model=model, key_index=key_index
        )
        return channel, result
    async with aiohttp.ClientSession(skip_auto_headers=("User-Agent",)) as own:
        result = await probe_channel(
            channel_type, own, channel, timeouts=timeouts, request_id=request_id, model=model, key_index=key_index
        )
    return channel, result


async def channel_statuses(admin: Admin, *, in_flight: Mapping[int, int] | None = None) -> list[ChannelStatus]:
    """Every channel with its health: stored state and the breakers the workers reported."""
    channels = await admin.store.list_channels()
    reports: dict[int, list[BreakerReport]] = {}
    for report in await admin.store.list_breakers():
        reports.setdefault(report.channel_id, []).append(report)
    now = time.time()
    counts = in_flight or {}
    return [
        ChannelStatus(channel, describe_health(channel, reports.get(channel.id, []), now, counts.get(channel.id), needs_key=_needs_key(admin, channel)))
        for channel in channels
    ]


def _needs_key(admin: Admin, channel: ChannelRecord) -> bool:
    """Whether the channel's type needs an upstream key (a type not loaded: assumed so).
    Asked only of a channel without keys, and of the types only when its plugin does not
    declare it keyless: reading the types loads every adapter."""
    if channel.api_keys:
        return True
    if channel.type in admin.keyless_types:
        return False
    channel_type = admin.channel_types.get(channel.type)
    return channel_type.needs_key if channel_type is not None else True


async def channel_traffic(admin: Admin, since: float) -> dict[int, ChannelTraffic]:
    """Each channel's requests since ``since``, by channel id."""
    return {traffic.channel_id: traffic for traffic in await admin.store.channel_traffic(since)}


def check_fields(admin: Admin, changes: ChannelFields, existing: ChannelRecord | None) -> dict[str, Any]:
    """The fields to store, validated (all required ones when ``existing`` is ``None``)."""
    fields = dict(changes)
    unknown = sorted(set(fields) - set(EDITABLE))
    if unknown:
        raise Invalid(f"a channel has no field(s) {', '.join(unknown)}")
    for name in LISTS:
        if name in fields:
            fields[name] = [value for value in dict.fromkeys(fields[name]) if value]
    if "api_keys" in fields:
        check_upstream_keys(fields["api_keys"])
    adding = existing is None
    if adding or "name" in fields:
        fields["name"] = str(fields.get("name") or "").strip()
        if not fields["name"]:
            raise Invalid("needs a name", "name")
    if existing is not None and fields.get("type") == existing.type:
        del fields["type"]  # not a change: a channel of a type not loaded stays editable
    channel_type = None
    if adding or "type" in fields:
        kind = fields.get("type") or ""
        channel_type = admin.channel_types.get(kind)
        if channel_type is None:
            known = ", ".join(sorted(admin.channel_types)) or "none loaded"
            raise Invalid(f"names an unknown channel type {kind!r} (available: {known})", "type")
    elif existing is not None and ("base_url" in fields or "settings" in fields):  # read only when used: it loads every adapter
        channel_type = admin.channel_types.get(existing.type)
    if adding or "base_url" in fields:
        url = str(fields.get("base_url") or "").strip()
        check_base_url(url, channel_type)
        fields["base_url"] = channel_type.normalize_base_url(url) if channel_type else url.rstrip("/")
    for name, what in (("models", "model"), ("groups", "group")):
        if (adding or name in fields) and not fields.get(name):
            raise Invalid(f"needs at least one {what}", name)
    unknown_endpoints = [name for name in fields.get("endpoints", ()) if name not in endpoints.ALL]
    if unknown_endpoints:
        raise Invalid(f"has unknown endpoint(s) {', '.join(unknown_endpoints)}; known: {', '.join(endpoints.ALL)}", "endpoints")
    for name in CHANNEL_NUMBERS:
        if fields.get(name) is not None:
            check_channel_number(fields[name], name)  # the CLI's, the console's and the API's rule
    for name in TIMEOUTS:
        if fields.get(name) is not None and not 0 < float(fields[name]) < math.inf:
            raise Invalid("must be more than 0 seconds", name)
    if "headers" in fields:
        fields["headers"] = _checked_headers(fields["headers"] or {})
    if adding or "settings" in fields or "type" in fields:
        fields["settings"] = _checked_settings(channel_type, fields, existing)
    return fields


def changed_settings(stored: Mapping[str, Any], values: Mapping[str, str], unset: Sequence[str]) -> dict[str, Any]:
    """A channel's settings after an edit that sets ``values`` and removes ``unset``
    (``relaygate channel edit --setting NAME=VALUE --unset-setting NAME``); the
    result goes to :func:`update_channel`, which validates it."""
    missing = [name for name in unset if name not in stored]
    if missing:
        held = ", ".join(sorted(stored)) or "none"
        raise Invalid(f"cannot unset {', '.join(map(repr, missing))}: not set (the channel sets: {held})")
    return {**{name: value for name, value in stored.items() if name not in unset}, **values}


def _checked_settings(channel_type: ChannelType | None, fields: Mapping[str, Any], existing: ChannelRecord | None) -> dict[str, Any]:
    """The settings to store, validated against the channel type's schema: the
    given ones, else (a change of type) the stored ones."""
    given = "settings" in fields
    settings = dict(fields.get("settings") or {}) if given or existing is None else dict(existing.settings)
    if channel_type is None:  # an edit of a channel whose type is not loaded
        kind = existing.type if existing is not None else "?"
        raise Invalid(f"the channel's settings cannot be checked: its type {kind!r} is not loaded (its plugin is missing)")
    try:
        return validate_settings((*channel_type.settings, *CORE_SETTINGS), settings)
    except SettingError as error:
        if given:
            raise Invalid(str(error)) from None
        raise Invalid(f"the stored settings do not suit the channel type {channel_type.name!r}: {error}") from None


def _checked_headers(headers: Mapping[str, Any]) -> dict[str, str]:
    """Headers sent upstream: names are HTTP tokens, values one line of text."""
    checked: dict[str, str] = {}
    for name, value in headers.items():
        name = str(name).strip()
        if not HEADER_NAME.fullmatch(name):
            raise Invalid(f"has a name that is not a valid HTTP header name: {name!r}", "header")
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            raise Invalid(f"{name!r} must be one line of text", "header")
        if name.lower() in (seen.lower() for seen in checked):
            raise Invalid(f"names {name!r} twice", "header")
        checked[name] = value.strip()
    return checked

