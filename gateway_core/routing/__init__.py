"""Routing and channel health: which channel and upstream key serve a request.

The router's candidates by group, model and endpoint (``router``, read from a short-lived
``snapshot``), one request's attempts and failover (``failover``), model fallbacks
(``fallbacks``), session affinity (``affinity``), the health of channels and keys in this
worker (``health``, its circuit ``breaker``; ``health_report`` for people), testing a
channel (``probe``) and whether this replica takes traffic (``readiness``). It may import
the contract and the store's port; the request path only for types and its ASGI helpers;
never the runtime, the admin operations or a front.
"""
