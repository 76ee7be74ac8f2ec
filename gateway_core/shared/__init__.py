"""State shared by every worker and replica through Redis (when it is configured).

- :mod:`.events`: the invalidation messages (a key, a user, a group, the
  channels, the prices, a breaker, an upstream key disabled) and what a
  gateway drops when one arrives;
- :mod:`.bus`: publishing them on Redis pub/sub, and the subscriber every
  gateway runs, which reconnects by itself;
- :mod:`.health`: channel concurrency caps counted across replicas, circuit
  breakers opened and closed for all, one half-open probe for all;
- :mod:`.setup`: wiring them into a gateway's services.

Without Redis none of this is loaded and each process keeps its state in memory.
"""
