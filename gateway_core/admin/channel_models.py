"""Fetching a channel's models from its upstream (``relaygate channel models
--fetch``, ``GET /api/v1/channels/{id}/upstream-models``, the console channel
form's "Fetch models from the upstream", ``relaygate channel add --fetch-models``
through :func:`add_channel_with_upstream_models`).

The channel type lists them (:meth:`ChannelType.list_models`) with one of the
channel's upstream keys (the first usable, or the one asked for) and the
channel's timeouts; the answer is neither billed nor logged nor counted by the
breakers. Every outcome is an :class:`UpstreamModels`: the ids, or a message that
says why there are none (the type cannot list, the upstream refused the key, did
not answer in time …), the same words on every front, with the key masked
should the upstream have echoed it, and the same warning about the models no one
prices (``warning``, :func:`gateway_core.admin.prices.unpriced_warning`). Adding the models to the channel is an
ordinary edit (:func:`add_models`), audited by the front that makes it.
"""

from __future__ import annotations

import asyncio
import fnmatch
import time
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
import attrs
import structlog

from ..channel_type import ChannelType, ListingLimits, ModelQuery, ModelsNotListed, Timeouts
from ..errors import GatewayError, UpstreamTimeoutError
from ..routing.probe import probe_key
from ..records import ChannelRecord
from ..routing.router import route_for
from ..secrets import redact
from .channels import add_channel, check_fields, get_channel, update_channel
from .context import Admin
from .errors import Invalid
from .prices import unpriced_models, unpriced_warning

MAX_MODEL_ID = 200  # the longest model id a channel takes (the API's schema says so too)
DRAFT_FIELDS = ("type", "base_url", "api_keys", "headers", "settings", "timeout_connect", "timeout_first_byte", "timeout_idle")
log = structlog.get_logger("relaygate.admin")


@attrs.frozen
class UpstreamModels:
    """What the upstream listed: ``models`` in its order; ``new`` those the channel
    does not serve yet; ``unpriced`` those whose requests would be refused for want
    of a price (set by the admin operations, which see the prices). ``ok`` is false when nothing could be listed, and
    ``message`` says why (or, when ok, what was found)."""

    ok: bool
    models: tuple[str, ...]
    new: tuple[str, ...]
    message: str
    latency_ms: float
    status: int | None = None  # the upstream's HTTP status when it failed with one
    key_index: int | None = None
    unpriced: tuple[str, ...] = ()  # of models, those with a price from neither the operator nor the catalogue
    warning: str | None = None  # what every front says of the unpriced ones (prices.unpriced_warning)


async def list_upstream_models(
    channel_type: ChannelType | None,
    session: aiohttp.ClientSession,
    channel: ChannelRecord,
    *,
    timeouts: Timeouts,
    request_id: str,
    key_index: int | None = None,
    match: str | None = None,
    limits: ListingLimits = ListingLimits(),
) -> UpstreamModels:
    """Ask ``channel``'s upstream for its models (``match``: only ids matching this
    shell-style pattern, such as ``chat-*``). The whole listing, every page, must
    come within the channel's first-byte timeout."""
    if channel_type is None:
        return _failed(f"no loaded plugin provides the channel type {channel.type!r}")
    picked = probe_key(channel, key_index)
    lists = type(channel_type).list_models is not ChannelType.list_models  # else the default says it cannot
    if picked is None and lists:
        return _failed(f"the channel has no upstream key #{key_index} (it has {len(channel.api_keys)})")
    index, api_key = picked or (0, "")
    if not api_key and channel_type.needs_key and lists:
        return _failed("the channel has no upstream key to ask its upstream with")
    query = ModelQuery(channel, api_key, session, route_for(channel, timeouts).timeouts, request_id, limits)
    started = time.perf_counter()
    seconds = query.timeouts.first_byte
    try:
        try:
            async with asyncio.timeout(seconds):  # every page together, as well as each one
                listed = await channel_type.list_models(query)
        except TimeoutError:
            raise UpstreamTimeoutError(f"the upstream did not answer within {seconds:g} s") from None
    except ModelsNotListed as error:
        return _failed(error.message)
    except GatewayError as error:
        return _failed(redact(error.message, api_key), _ms(started), error.upstream_status, index)
    except Exception as exc:  # a broken adapter must not break the front
        log.warning("channel.models_broken", channel=channel.id, error=type(exc).__name__)
        return _failed(f"the channel type {channel.type!r} failed to list its models ({type(exc).__name__})", _ms(started), None, index)
    models = tuple(_usable(listed, match))
    served = set(channel.models)
    new = tuple(model for model in models if model not in served)
    return UpstreamModels(True, models, new, _found(models, new, match), _ms(started), None, index)


async def channel_upstream_models(
    admin: Admin,
    channel_id: int,
    *,
    timeouts: Timeouts,
    request_id: str,
    key_index: int | None = None,
    match: str | None = None,
    session: aiohttp.ClientSession | None = None,
) -> tuple[ChannelRecord, UpstreamModels]:
    """The models a stored channel's upstream offers. ``session`` is the running
    gateway's upstream session; without one (the CLI) a session is opened for it."""
    channel = await get_channel(admin, channel_id)
    listed = await _listed(admin, channel, session, timeouts=timeouts, request_id=request_id, key_index=key_index, match=match)
    return channel, listed


async def draft_upstream_models(
    admin: Admin,
    fields: Mapping[str, Any],
    *,
    channel_id: int | None = None,
    timeouts: Timeouts,
    request_id: str,
    match: str | None = None,
    session: aiohttp.ClientSession | None = None,
) -> UpstreamModels:
    """The models the upstream of a channel being added or edited offers, before it
    is saved: ``fields`` are the form's type, base URL, upstream keys, headers,
    settings and timeouts (validated as a save would; keys left out: the stored
    channel's)."""
    existing = await get_channel(admin, channel_id) if channel_id is not None else None
    base = existing or ChannelRecord(id=0, name="new", type="", base_url="", api_keys=(), models=(), model_map={}, groups=())
    given = {name: fields[name] for name in DRAFT_FIELDS if name in fields}
    if existing is None and not given.get("type"):
        raise Invalid("must be chosen first", "type")
    if existing is None and "base_url" not in given:
        raise Invalid("must be given first", "base_url")
    checked = check_fields(admin, given, base)
    if "api_keys" in checked:
        checked["api_keys"] = tuple(checked["api_keys"])
    draft = attrs.evolve(base, **checked)
    return await _listed(admin, draft, session, timeouts=timeouts, request_id=request_id, match=match)


async def add_channel_with_upstream_models(
    admin: Admin,
    fields: Mapping[str, Any],
    *,
    timeouts: Timeouts,
    request_id: str,
    match: str | None = None,
    session: aiohttp.ClientSession | None = None,
) -> tuple[ChannelRecord | None, UpstreamModels]:
    """Add a channel serving the models its upstream offers (``match``: those
    matching the pattern), after the ``models`` given in ``fields`` if any: the
    upstream is asked first, with the fields' base URL, keys, headers, settings and
    timeouts, so a listing that fails or finds nothing adds no channel (``None``,
    and the listing's message says why). The listing's ``unpriced`` and ``warning``
    are then of every model the channel serves."""
    listed = await draft_upstream_models(admin, fields, timeouts=timeouts, request_id=request_id, match=match, session=session)
    if not listed.ok or not listed.models:
        return None, attrs.evolve(listed, ok=False)
    given = list(fields.get("models") or ())
    models = [*given, *(model for model in listed.models if model not in given)]
    channel = await add_channel(admin, {**fields, "models": models})
    unpriced = tuple(await unpriced_models(admin, channel.models))
    served = attrs.evolve(listed, new=(), message=_found(listed.models, (), match))  # every one served now
    return channel, attrs.evolve(served, unpriced=unpriced, warning=unpriced_warning(unpriced))


async def add_models(admin: Admin, channel_id: int, models: Iterable[str]) -> tuple[ChannelRecord, ChannelRecord]:
    """Add ``models`` to the channel's (those it serves already are kept once):
    the channel before and after, for the front's audit row."""
    before = await get_channel(admin, channel_id)
    wanted = [*before.models, *(model for model in models if model not in before.models)]
    if len(wanted) == len(before.models):
        return before, before
    return before, await update_channel(admin, channel_id, {"models": wanted})


async def _listed(
    admin: Admin, channel: ChannelRecord, session: aiohttp.ClientSession | None, **options: Any
) -> UpstreamModels:
    channel_type = admin.channel_types.get(channel.type)
    if session is not None:
        listed = await list_upstream_models(channel_type, session, channel, **options)
    else:
        async with aiohttp.ClientSession(skip_auto_headers=("User-Agent",)) as own:
            listed = await list_upstream_models(channel_type, own, channel, **options)
    if not listed.models:
        return listed
    unpriced = tuple(await unpriced_models(admin, listed.models))
    return attrs.evolve(listed, unpriced=unpriced, warning=unpriced_warning(unpriced))


def _usable(listed: Iterable[Any], match: str | None) -> Iterable[str]:
    seen: set[str] = set()
    for model in listed:
        if not isinstance(model, str):
            continue
        model = model.strip()
        if not model or len(model) > MAX_MODEL_ID or model in seen or (match and not fnmatch.fnmatchcase(model, match)):
            continue
        seen.add(model)
        yield model


def _found(models: tuple[str, ...], new: tuple[str, ...], match: str | None) -> str:
    matching = f" matching {match!r}" if match else ""
    if not models:
        return f"the upstream lists no models{matching}"
    many = "model" if len(models) == 1 else "models"
    return f"the upstream lists {len(models)} {many}{matching}, {len(new)} not yet served by the channel"


def _failed(message: str, latency_ms: float = 0.0, status: int | None = None, key_index: int | None = None) -> UpstreamModels:
    return UpstreamModels(False, (), (), message, latency_ms, status, key_index)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)
