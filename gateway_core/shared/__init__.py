"""State shared by every worker and replica, the core's side of it.

- :mod:`.events`: the invalidation messages (a key, a user, a group, the
  channels, the prices, a breaker, an upstream key disabled) and what a
  gateway drops when one arrives;
- :mod:`.in_process`: the default kind, a gateway alone counting in its own
  memory;
- :mod:`.kinds`: registering it through ``register_shared_state``.

Redis (publishing the events on pub/sub, limits, channel caps and breakers
across replicas) is the first-party plugin ``relaygate-redis``
(``plugins/redis``), behind :mod:`gateway_core.shared_state`. This package may import
the contract, the in-process limiters of ``ratelimit/`` and the in-process state of
``routing/`` (health, affinity, the router's caches) it shares; never the request path,
the runtime, the admin operations or a front.
"""
