"""The scenarios of ``bench/overhead.py``: what each sends, at what concurrency, through
which client protocol and channel, and the record it leaves (see that module's docstring)."""

from __future__ import annotations

from typing import Any

from arms import Arm
from loadgen import Target
from seeding import CHANNEL_MODELS, UPSTREAM_KEY
from shapes import Shape, agent, paced, tiny
from wires import WIRES

BASES = ("c1", "stream1", "c50", "stream50", "paced50", "paced500", "agent10", "agentstream50")
# a client protocol on a channel of its own protocol or converted: (client, channel)
ROUTES = {
    "anthropic": ("anthropic", "anthropic"), "anthropic-on-openai": ("anthropic", "openai"),
    "gemini": ("gemini", "gemini"), "gemini-on-openai": ("gemini", "openai"),
}  # fmt: skip
ROUTED = tuple(f"{route}:{base}" for route in ROUTES for base in BASES)
SCENARIOS = (*BASES, *ROUTED, "hello")
DEFAULT_SCENARIOS = (*BASES, *(f"{route}:{base}" for route in ROUTES for base in ("stream50", "paced50", "agent10", "agentstream50")))


SCENARIO_TITLES = {
    "c1": "non-streaming, concurrency 1 (arms take turns)",
    "stream1": "streaming, concurrency 1 (arms take turns)",
    "c50": "non-streaming, concurrency {c} (arms interleaved)",
    "stream50": "streaming, concurrency {c} (arms interleaved)",
    "paced50": "streams of 20 chunks 5 ms apart, concurrency {c} (arms interleaved)",
    "paced500": "streams of 500 chunks 5 ms apart, concurrency {c} (arms interleaved)",
    "agent10": "coding-agent body, non-streaming, concurrency 10 (arms interleaved)",
    "agentstream50": "coding-agent body, streaming, concurrency {c} (arms interleaved)",
}


def scenario_load(name: str, args) -> tuple[Shape, int]:
    """What a scenario sends, and at what concurrency (1: the arms take turns). A routed
    scenario (``anthropic-on-openai:agent10``) sends its base's body in its client's protocol."""
    route, _, base = name.rpartition(":")
    shapes = {
        "c1": (tiny(False), 1), "stream1": (tiny(True), 1),
        "c50": (tiny(False), args.concurrency), "stream50": (tiny(True), args.concurrency),
        "paced50": (paced(20, 5), args.concurrency), "paced500": (paced(500, 5), args.concurrency),
        "agent10": (agent(False), 10), "agentstream50": (agent(True), args.concurrency),
    }  # fmt: skip
    shape, concurrency = shapes[base]
    if route:
        client, channel = ROUTES[route]
        shape = Shape(shape.stream, WIRES[client].request_body(shape.body, CHANNEL_MODELS[channel]))
    return shape, concurrency


def scenario_title(name: str, args) -> str:
    route, _, base = name.rpartition(":")
    title = SCENARIO_TITLES[base].format(c=args.concurrency)
    if not route:
        return title
    client, channel = ROUTES[route]
    return f"{title}, {client} client on {'its own' if client == channel else 'an ' + channel} channel"


def routed_arms(route: str, urls: dict[str, str], key: str) -> list[Arm]:
    """The direct, floor and gateway arms of a routed scenario: the client's protocol
    straight to the upstream and through the floor, and through the gateway to a model
    on the route's channel."""
    client, channel = ROUTES[route]
    wire = WIRES[client]
    return [
        Arm("direct", Target("direct", urls["direct"], UPSTREAM_KEY, wire=wire, model=CHANNEL_MODELS[client]), "upstream"),
        Arm("floor", Target("floor", urls["floor"], UPSTREAM_KEY, wire=wire, model=CHANNEL_MODELS[client]), "floor"),
        Arm("gateway", Target("gateway", urls["gateway"], key, wire=wire, model=CHANNEL_MODELS[channel]), "gateway"),
    ]


def scenario(name: str, arms_out: dict[str, dict[str, Any]], args) -> dict[str, Any]:
    """One scenario's record. ``arms`` holds every arm's figures; the older keys
    (``direct``, ``gateway``, ``cpu``, ``direct_cpu``, ``added_*``) stay for scripts."""
    shape, concurrency = scenario_load(name, args)
    out: dict[str, Any] = {
        "scenario": name,
        "title": scenario_title(name, args),
        "concurrency": concurrency,
        "stream": shape.stream,
        "arms": arms_out,
        "direct": arms_out["direct"],
        "direct_cpu": arms_out["direct"]["cpu"],
    }
    gateway, floor_ = arms_out.get("gateway"), arms_out.get("floor")
    if gateway is not None:
        out["gateway"] = gateway
        out["cpu"] = gateway["cpu"]
        for key in ("added_p50_ms", "added_p99_ms", "added_first_byte_p50_ms"):
            if key in gateway:
                out[key] = gateway[key]
    if floor_ is not None:
        out["ratios_to_floor"] = {
            arm: {
                "cpu_ms_per_req": ratio(v.get("cpu_ms_per_req"), floor_.get("cpu_ms_per_req")),
                "rps": ratio(v.get("rps"), floor_.get("rps")),
            }
            for arm, v in arms_out.items()
            if arm not in ("direct", "floor")
        }
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 2)
