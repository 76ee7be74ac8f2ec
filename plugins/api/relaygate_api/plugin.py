"""The management API's plugin: its routes (:mod:`.mount`) on the gateway,
through ``register_routes`` (Starlette and the operations imported only then)."""

from __future__ import annotations

from gateway_core.hookspecs import RegisterRoute, hookimpl


@hookimpl
def register_routes(register: RegisterRoute) -> None:
    from .mount import api_mount

    register(api_mount())
