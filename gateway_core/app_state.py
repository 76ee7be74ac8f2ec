"""Where an app's services live in the ASGI scope, for plugin routes (the console)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .services import Services

SERVICES_STATE = "relaygate.services"  # the key of the services in the lifespan state


def services_from_scope(scope: MutableMapping[str, Any]) -> Services:
    """The gateway's services, for plugin routes (the console): the app's lifespan
    puts them in every request's ``scope["state"]``."""
    services: Services = scope["state"][SERVICES_STATE]
    return services
