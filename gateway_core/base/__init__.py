"""The base: small helpers the contract itself is built on.

``lazy`` (names imported when first read), ``timeouts`` (``Timeouts``, part of the
channel-type contract and of ``Config``), ``config_env`` (``RELAYGATE_<NAME>`` settings
over the file), ``retention`` (the ``[retention]`` settings and the rollup's steps),
``asgi`` (request bodies, headers, the client's address), ``coarse_timers`` (deadlines
on one shared clock) and ``frame_stream`` (a streamed answer cut into frames). The
public modules may import them, and so may every room. They import nothing of the
rooms above them (request/, routing/, runtime/, store/, policies/, shared/, admin/,
commands/): of the core, only the contract's value modules (``errors``, ``types``,
``client_protocol``'s ``Frame``, ``ratelimit``'s fault kinds). Importing this package
loads nothing but itself.
"""
