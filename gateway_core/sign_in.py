"""Sign-in sessions on the management API: what a plugin that signs people in
(the console) hands the API (the ``relaygate-api`` plugin), so a page's script can
call ``/api/v1/`` with the session cookie instead of a token.

A plugin registers a :class:`SessionReader` through the
``register_session_readers`` hook (the core's, so that neither the console nor the
API depends on the other for it). For each API request without a bearer token
the API asks the readers in turn; the first that recognises a session answers
with a :class:`SessionUser`, saying whether the request also carries the
session's CSRF token (header ``X-CSRF-Token``), which every write needs.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs

CSRF_HEADER = "x-csrf-token"


@attrs.frozen
class SessionUser:
    """The signed-in user of a live session, and whether the request carries its CSRF token."""

    user_id: int
    user_name: str
    is_admin: bool
    csrf_valid: bool


class SessionReader(Protocol):
    async def read_session(self, scope: dict[str, Any]) -> SessionUser | None:
        """The session of the request ``scope`` (an ASGI HTTP scope; its cookies
        and headers are there), or ``None`` when it has none that is live."""
