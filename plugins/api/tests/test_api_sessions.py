"""Sign-in sessions on the management API: a plugin's reader (the core's
``register_session_readers`` hook, :mod:`gateway_core.sign_in`) lets a request
without a token act as the session's user, with the scope ``write``, and every
write needs the session's CSRF token."""

from __future__ import annotations

import aiohttp
import pytest

from gateway_core import hookimpl
from gateway_core.sign_in import CSRF_HEADER, SessionUser


class HeaderSessions:
    """A session reader: the header ``x-test-session: USER_ID`` is a session of that user."""

    async def read_session(self, scope):
        headers = dict(scope["headers"])
        user_id = headers.get(b"x-test-session")
        if user_id is None:
            return None
        return SessionUser(int(user_id), "eve", False, headers.get(CSRF_HEADER.encode()) == b"right")


class SessionPlugin:
    @hookimpl
    def register_session_readers(self, register):
        register(HeaderSessions())


@pytest.fixture
def relaygate_plugins():
    return [SessionPlugin()]


async def test_a_session_acts_as_its_user_and_writes_with_its_csrf_token(seed, start_gateway):
    user_id = seed.user("eve")
    gateway = start_gateway()
    session = {"x-test-session": str(user_id)}
    async with aiohttp.ClientSession() as http:
        async with http.get(gateway.url + "/api/v1/me", headers=session) as response:
            assert response.status == 200
            me = await response.json()
            assert (me["user"]["name"], me["via"], me["scope"]) == ("eve", "session", "write")
        async with http.get(gateway.url + "/api/v1/me") as response:
            assert response.status == 401
        new_key = {"name": "from-a-session"}
        async with http.post(gateway.url + "/api/v1/keys", json=new_key, headers=session) as response:
            assert response.status == 403  # a write without the session's CSRF token
            assert (await response.json())["error"]["code"] == "csrf"
        async with http.post(gateway.url + "/api/v1/keys", json=new_key, headers=session | {CSRF_HEADER: "right"}) as response:
            assert response.status == 201
            assert (await response.json())["key"]["name"] == "from-a-session"
