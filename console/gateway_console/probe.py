"""Probing (testing) a channel from the console: one small real chat request through its type.

The request is built in the core model (so every channel type can translate
it), sent with the channel's first upstream key, and neither billed nor logged.
"""

from __future__ import annotations

import time
from typing import Any

import attrs

from gateway_core import Call, ChatRequest, Exchange, GatewayError, JsonReply, Message, Role, Target, TextPart, endpoints
from gateway_core.records import ChannelRecord


@attrs.frozen
class ProbeResult:
    ok: bool
    model: str
    latency_ms: float
    message: str


async def probe_channel(services: Any, channel: ChannelRecord, request_id: str, model: str | None = None) -> ProbeResult:
    model = model or (channel.models[0] if channel.models else "")
    if not model:
        return ProbeResult(False, "", 0.0, "The channel serves no model to test with.")
    if services.session is None:
        return ProbeResult(False, model, 0.0, "The gateway is not running its upstream session.")
    channel_type = services.registry.channel_types.get(channel.type)
    if channel_type is None:
        return ProbeResult(False, model, 0.0, f"No loaded plugin provides the channel type {channel.type!r}.")
    request = ChatRequest(model=model, messages=(Message(Role.USER, (TextPart("ping"),)),), max_tokens=8)
    call = Call(protocol="console", endpoint=endpoints.CHAT, wire="console.test", model=model, stream=False, body={})
    target = Target(channel=channel, api_key=channel.api_keys[0] if channel.api_keys else "", upstream_model=channel.upstream_model(model))
    exchange = Exchange(call, target, request, services.session, services.config.timeouts, request_id)
    started = time.perf_counter()
    try:
        reply = await channel_type.send(exchange)
    except GatewayError as error:
        detail = f" (upstream status {error.upstream_status})" if error.upstream_status else ""
        return ProbeResult(False, model, _ms(started), error.message + detail)
    except Exception as exc:  # a broken adapter must not break the page
        return ProbeResult(False, model, _ms(started), f"{type(exc).__name__}: {exc}")
    if not isinstance(reply, JsonReply):
        await reply.close()
        return ProbeResult(True, model, _ms(started), "The upstream answered (as a stream).")
    text = ""
    if reply.response is not None:
        text = "".join(p.text for p in reply.response.parts if isinstance(p, TextPart))
    return ProbeResult(True, model, _ms(started), f"The upstream answered: {text[:200]!r}" if text else "The upstream answered.")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)
