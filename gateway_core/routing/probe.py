"""Testing a channel: one small real chat request through its channel type.

The request ("ping", at most 8 output tokens) is built in the core model, so
every channel type can translate it; it goes with one upstream key of the
channel (the first usable one, or the one asked for) and the channel's
timeouts, and is neither billed nor logged nor counted by the breakers.
``relaygate channel test`` and the console's Test button use it.
"""

from __future__ import annotations

import time

import aiohttp
import attrs

from .. import endpoints
from ..channel_type import ChannelType, Exchange, JsonReply, Target, Timeouts
from ..client_protocol import Call
from ..errors import GatewayError
from ..secrets import redact
from ..model import ChatRequest, ChatResponse, Message, Role, TextPart
from ..records import ChannelRecord
from .router import route_for


@attrs.frozen
class ProbeResult:
    ok: bool
    model: str
    latency_ms: float
    message: str
    status: int | None = None  # the upstream's HTTP status; None when it gave none (no connection, a timeout)
    key_index: int | None = None


def probe_key(channel: ChannelRecord, key_index: int | None) -> tuple[int, str] | None:
    """The key to test with: ``key_index`` if given, else the first one not disabled."""
    if key_index is not None:
        if not channel.api_keys and key_index == 0:
            return 0, ""
        if not 0 <= key_index < len(channel.api_keys):
            return None
        return key_index, channel.api_keys[key_index]
    if not channel.api_keys:
        return 0, ""
    usable = [(n, key) for n, key in enumerate(channel.api_keys) if channel.key_disabled(key) is None]
    return usable[0] if usable else (0, channel.api_keys[0])


async def probe_channel(
    channel_type: ChannelType | None,
    session: aiohttp.ClientSession | None,
    channel: ChannelRecord,
    *,
    timeouts: Timeouts = Timeouts(),
    request_id: str = "probe",
    model: str | None = None,
    key_index: int | None = None,
) -> ProbeResult:
    model = model or (channel.models[0] if channel.models else "")
    if not model:
        return ProbeResult(False, "", 0.0, "The channel serves no model to test with.")
    if channel_type is None:
        return ProbeResult(False, model, 0.0, f"No loaded plugin provides the channel type {channel.type!r}.")
    if session is None:
        return ProbeResult(False, model, 0.0, "The gateway is not running its upstream session.")
    picked = probe_key(channel, key_index)
    if picked is None:
        return ProbeResult(False, model, 0.0, f"The channel has no upstream key #{key_index} (it has {len(channel.api_keys)}).")
    index, api_key = picked
    request = ChatRequest(model=model, messages=(Message(Role.USER, (TextPart("ping"),)),), max_tokens=8)
    call = Call(protocol="probe", endpoint=endpoints.CHAT, wire="probe", model=model, stream=False, body={})
    target = Target(channel=channel, api_key=api_key, upstream_model=channel.upstream_model(model))
    exchange = Exchange(call, target, request, session, route_for(channel, timeouts).timeouts, request_id)
    started = time.perf_counter()
    try:
        reply = await channel_type.send(exchange)
    except GatewayError as error:
        return ProbeResult(False, model, _ms(started), redact(error.message, api_key), error.upstream_status, index)
    except Exception as exc:  # a broken adapter must not break the caller
        return ProbeResult(False, model, _ms(started), f"{type(exc).__name__}: {exc}", None, index)
    latency = _ms(started)
    if not isinstance(reply, JsonReply):
        await reply.close()
        return ProbeResult(True, model, latency, "The upstream answered (as a stream).", 200, index)
    text = ""
    if isinstance(reply.response, ChatResponse):
        text = "".join(p.text for p in reply.response.parts if isinstance(p, TextPart))
    message = f"The upstream answered: {text[:200]!r}" if text else "The upstream answered."
    return ProbeResult(True, model, latency, message, 200, index)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)
