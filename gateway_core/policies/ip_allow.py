"""Refuses requests from addresses outside the key's IP allow list.

The allow list is parsed once per distinct list (keyed by the key record's
tuple), not per request; a key without a list costs one attribute test. The
client address is the socket peer, or the forwarded address when the peer is a
trusted proxy (``[gateway] trusted_proxies``, see :class:`gateway_core.base.asgi.ClientAddress`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from ..request.context import RequestContext
from ..errors import PermissionDeniedError
from ..gateway import Gateway
from ..policy import Policy

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_CACHED_LISTS = 10_000


class IPAllowList(Policy):
    name = "ip_allow"
    order = 300

    def __init__(self) -> None:
        self._networks: dict[tuple[str, ...], tuple[Network, ...]] = {}

    async def admit(self, ctx: RequestContext, gateway: Gateway) -> None:
        allow = ctx.authenticated_key().allow_ips
        if not allow:
            return
        networks = self._networks.get(allow)
        if networks is None:
            networks = self._compile(allow)
        address = ctx.client_ip
        if address is None or not allowed(address, networks):
            seen = address if address is not None else "an unknown address"
            raise PermissionDeniedError(
                f"This API key does not accept requests from {seen}. "
                "Call from an address in the key's IP allow list, or ask its owner to add this one.",
                code="ip_not_allowed",
            )

    def _compile(self, allow: tuple[str, ...]) -> tuple[Network, ...]:
        if len(self._networks) >= MAX_CACHED_LISTS:
            self._networks.clear()
        networks = compile_networks(allow)
        self._networks[allow] = networks
        return networks


def compile_networks(texts: Sequence[str]) -> tuple[Network, ...]:
    """The networks of an allow list; entries that are not networks are skipped
    (the store refuses them, so none should be there)."""
    networks = []
    for text in texts:
        try:
            networks.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError:
            continue
    return tuple(networks)


def allowed(address: str, networks: Sequence[Network]) -> bool:
    """Whether ``address`` is in one of ``networks`` (an IPv4-mapped IPv6 address
    counts as its IPv4 address)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in networks)
