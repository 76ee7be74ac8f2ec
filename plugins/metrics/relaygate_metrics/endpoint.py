"""``GET /metrics``: the Prometheus text format, for whom the operator allows.

Access (``[gateway]`` settings): with ``metrics_token`` (or
``RELAYGATE_METRICS_TOKEN``) a scrape must send ``Authorization: Bearer TOKEN``;
with ``metrics_allow`` it must come from one of those addresses or networks;
with both, both hold. With neither, only loopback clients are answered. The
client's address is found as for every request (``trusted_proxies``).

Each scrape also measures what only a query tells: the store's round trip and
the money it holds for requests in flight, and Redis's round trip when
configured. A store or Redis that does not answer within a second leaves its
figures out of that scrape (``/readyz`` says why).
"""

from __future__ import annotations

import asyncio
import hmac
import time
from typing import TYPE_CHECKING, cast

from gateway_core import services_from_scope
from gateway_core.base.asgi import send_body
from gateway_core.config import Config
from gateway_core.policies.ip_allow import allowed, compile_networks

from .recorder import Metrics

if TYPE_CHECKING:
    from gateway_core.runtime.services import Services

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
PROBE_TIMEOUT = 1.0
LOOPBACK = compile_networks(("127.0.0.0/8", "::1/128"))
HOLDS = "SELECT count(*) AS open, min(created_at) AS oldest FROM holds"


class MetricsEndpoint:
    """The route's endpoint, made with the app's configuration (``register_routes``);
    each scrape finds the app's services in its scope (``services_from_scope``)."""

    def __init__(self, config: Config) -> None:
        self.token = f"Bearer {config.metrics_token}".encode() if config.metrics_token else None
        self.networks = compile_networks(config.metrics_allow) if config.metrics_allow else None

    async def __call__(self, scope, receive, send) -> None:
        # a first-party plugin: the scrape reads the observers and the shared state beyond the Gateway Protocol
        services = cast("Services", services_from_scope(scope))
        refusal = self.refusal(scope, services)
        if refusal is not None:
            status, message, headers = refusal
            await send_body(send, status, message.encode() + b"\n", b"text/plain; charset=utf-8", headers)
            return
        metrics = services.observers.find(Metrics)
        if metrics is None:  # no metrics observer in this app
            await send_body(send, 404, b"metrics are not recorded by this gateway\n", b"text/plain; charset=utf-8")
            return
        await measure(services, metrics)
        await send_body(send, 200, metrics.exposition(), CONTENT_TYPE, [(b"cache-control", b"no-store")])

    def refusal(self, scope, services: Services) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """Why this scrape is refused (status, message, headers), or ``None``."""
        if self.token is not None:
            given = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
            if not hmac.compare_digest(given, self.token):
                return 401, "GET /metrics needs the metrics token: Authorization: Bearer TOKEN", [(b"www-authenticate", b"Bearer")]
        address = services.client_address(scope)
        networks = self.networks if self.networks is not None else (LOOPBACK if self.token is None else None)
        if networks is not None and (address is None or not allowed(address, networks)):
            where = "[gateway] metrics_allow" if self.networks is not None else "loopback (set [gateway] metrics_allow or metrics_token)"
            return 403, f"GET /metrics does not answer {address or 'an unknown address'}: allowed is {where}", []
        return None


async def measure(services: Services, metrics: Metrics) -> None:
    """The figures read at scrape time: store round trip and holds, Redis round trip,
    and the times Redis was unreachable (``services.shared.unreachable``)."""
    instruments = metrics.instruments
    started = time.perf_counter()
    try:
        row = await asyncio.wait_for(services.sql.fetch_one(HOLDS), PROBE_TIMEOUT)
    except Exception:  # unreachable or slow: no figure this time
        row = None
    else:
        instruments["relaygate_store_round_trip_seconds"].labels(metrics.store_kind).observe(time.perf_counter() - started)
    if row is not None:
        instruments["relaygate_holds_open"].set(row["open"] or 0)
        oldest = row["oldest"]
        instruments["relaygate_oldest_hold_age_seconds"].set(max(0.0, time.time() - oldest) if oldest else 0.0)
    unreachable = instruments["relaygate_redis_unreachable_total"]
    for (kind, outcome), count in services.shared.unreachable.items():  # counted on the request path, exported here
        exported = metrics.exported_faults.get((kind, outcome), 0)
        if count > exported:
            unreachable.labels(kind, outcome).inc(count - exported)
            metrics.exported_faults[(kind, outcome)] = count
    if services.config.redis:
        started = time.perf_counter()
        try:
            await asyncio.wait_for(services.shared.ping(), PROBE_TIMEOUT)
        except Exception:
            return
        instruments["relaygate_redis_round_trip_seconds"].observe(time.perf_counter() - started)
