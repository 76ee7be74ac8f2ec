"""The runtime: what assembles the app and serves it.

Loading plugins and what they registered (``plugins``, ``registry``), the long-lived
objects of one app (``services``; ``app_state`` says where plugin routes find them), the
ASGI app (``app``), serving it (``server``, ``http_errors``; with several workers
``supervisor``, ``worker``, ``cpu_pinning``), logging (``logs``), the retention job each
worker runs (``retention_job``), and ``jsonable`` (records as JSON for the edges). It is
the composition root: it may import every other room of the core, never a plugin under ``plugins/``, an adapter or the console.
Importing this package loads nothing but itself.
"""
