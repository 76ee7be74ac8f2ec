"""Session affinity: requests of one session go to the channel and upstream key
that served it last, while that channel is healthy, so that the provider's
prompt cache (which lives per upstream account) keeps hitting.

A request's session is, in this order, the configured header
(``[gateway] session_header``), or what its client protocol reads from the
body (:meth:`ClientProtocol.session_key
<gateway_core.client_protocol.ClientProtocol.session_key>`: the fields that
protocol's clients use to name a conversation, a cache or an end user; none by
default). Sessions are scoped by API key, so one key can never steer another's
requests.

Where a session went is kept as (channel id, key fingerprint), never the
upstream key itself:

- :class:`LocalAffinity`: in this process, an LRU of at most
  ``session_max_entries`` sessions, each forgotten ``session_ttl`` seconds after
  its last request;
- :class:`relaygate_redis.affinity.RedisAffinity` (the Redis plugin's): with
  Redis configured, in ``{prefix}:af:{digest}`` keys that expire
  ``session_ttl`` seconds after the session's last request, so that every
  replica sends a session to the same place (one ``GETEX`` per request that names a session; writes are not
  awaited; ``GETEX`` needs Redis 6.2 or later). Redis unreachable (or refusing):
  the request is routed as usual.

The channel is only preferred: when its breaker is open, its key cooling down
or it no longer serves the model, the request is routed as usual and the
session follows the channel that serves it.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..records import key_fingerprint

if TYPE_CHECKING:
    from ..client_protocol import ClientProtocol
    from .router import Route

MAX_SESSION_CHARS = 512  # a longer session name is cut (it is only hashed)
Place = tuple[int, str]  # (channel id, upstream key fingerprint)


def session_of(protocol: ClientProtocol, body: Mapping[str, Any], headers: Any, header: str | None) -> str | None:
    """The session a request names, if any (see the module's docstring)."""
    if header:
        value = headers.get(header)
        if value:
            return str(value)[:MAX_SESSION_CHARS]
    named = protocol.session_key(body)
    if not named or not isinstance(named, str):
        return None
    return named[:MAX_SESSION_CHARS]


def session_digest(key_id: int, session: str) -> str:
    """A fixed-size name of the session of one API key."""
    return hashlib.blake2b(f"{key_id}\x00{session}".encode("utf-8", "replace"), digest_size=16).hexdigest()


class Affinity(Protocol):
    header: str | None

    async def recall(self, digest: str) -> Place | None: ...

    def remember(self, digest: str, place: Place) -> None: ...

    def forget(self, digest: str) -> None: ...

    async def close(self) -> None: ...


class LocalAffinity:
    """Sessions in this process: a bounded LRU whose entries expire."""

    def __init__(self, *, ttl: float, max_entries: int, header: str | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self.header = header
        self.clock = clock
        self._places: OrderedDict[str, tuple[Place, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._places)

    async def recall(self, digest: str) -> Place | None:
        """Where the session went, its expiry moved on (a session in use stays)."""
        places = self._places
        entry = places.get(digest)
        if entry is None:
            return None
        now = self.clock()
        if entry[1] <= now:
            del places[digest]
            return None
        places[digest] = (entry[0], now + self.ttl)
        places.move_to_end(digest)
        return entry[0]

    def remember(self, digest: str, place: Place) -> None:
        places = self._places
        places[digest] = (place, self.clock() + self.ttl)
        places.move_to_end(digest)
        while len(places) > self.max_entries:
            places.popitem(last=False)

    def forget(self, digest: str) -> None:
        self._places.pop(digest, None)

    async def close(self) -> None:
        self._places.clear()


class Leased(Protocol):
    """What a session's steering reads of an attempt (a :class:`~.health.Lease`, whose
    module, with the shared state's, names this one's :class:`Affinity`)."""

    @property
    def route(self) -> Route: ...

    @property
    def api_key(self) -> str: ...


class Steering:
    """One request's session: where it went before, and where it goes now."""

    __slots__ = ("affinity", "digest", "place", "secret")

    def __init__(self, affinity: Affinity, digest: str, place: Place | None) -> None:
        self.affinity = affinity
        self.digest = digest
        self.place = place  # where the session went last (None: nowhere known)
        self.secret: str | None = None  # the upstream key of ``place``, once found among the routes

    def taken(self, lease: Leased) -> None:
        """An attempt of the session goes to ``lease``'s channel and key."""
        place = (lease.route.channel.id, key_fingerprint(lease.api_key))
        if place != self.place:
            self.place = place
            self.secret = lease.api_key
            self.affinity.remember(self.digest, place)

    def failed(self, lease: Leased) -> None:
        """That attempt failed: the session is no longer tied to it."""
        if self.place is not None and self.place[0] == lease.route.channel.id:
            self.place = None
            self.secret = None
            self.affinity.forget(self.digest)
