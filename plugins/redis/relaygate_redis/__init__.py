"""Relaygate's Redis shared state: rate limits, channel concurrency caps, circuit
breakers, sign-in and redemption throttles, session affinity and cache
invalidations shared by every worker and replica, as a shared-state kind
(:mod:`.kind`, registered by :mod:`.plugin` through ``register_shared_state``).

- :mod:`.state`: one gateway's connection to Redis and what it shares through it;
- :mod:`.limiter`, :mod:`.scripts`, :mod:`.resp`: the rate limiter's token
  buckets and channel slots in Lua, over one pipelined connection;
- :mod:`.health`, :mod:`.failures`, :mod:`.resync`: channel health (caps,
  breakers, one half-open probe) across replicas;
- :mod:`.bus`: the invalidation messages (:mod:`gateway_core.shared.events`) on
  Redis pub/sub, and the subscriber every gateway runs;
- :mod:`.signin`, :mod:`.affinity`, :mod:`.faults`: sign-in counters, session
  affinity, and what is counted when Redis cannot be reached.

Importing the package imports nothing else: the plugin is loaded on every start,
redis-py only when ``[gateway] redis`` is set.
"""
