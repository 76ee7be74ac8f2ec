"""Where an app's services live in the ASGI scope, for plugin routes (the console)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..gateway import Gateway

SERVICES_STATE = "relaygate.services"  # the key of the services in the lifespan state


def services_from_scope(scope: MutableMapping[str, Any]) -> Gateway:
    """The gateway, for plugin routes (the console): the app's lifespan puts it
    in every request's ``scope["state"]``; a route sees what the ``Gateway``
    Protocol names (``gateway_core.gateway``)."""
    gateway: Gateway = scope["state"][SERVICES_STATE]
    return gateway
