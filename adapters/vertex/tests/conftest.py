"""Fixtures of the vertex adapter's tests: the fake Google OAuth2 token endpoint and the
fake Vertex AI (``fake_vertex``), served on loopback, and the test service account."""

from __future__ import annotations

import pytest

from .fake_vertex import FakeGoogleOAuth, FakeVertex, ServiceAccount

_ACCOUNT: list[ServiceAccount] = []


@pytest.fixture
def account() -> ServiceAccount:
    if not _ACCOUNT:  # an RSA key takes a moment to make: one per test run
        _ACCOUNT.append(ServiceAccount.make())
    return _ACCOUNT[0]


@pytest.fixture
async def oauth(fake_upstream, account) -> FakeGoogleOAuth:
    return await fake_upstream(FakeGoogleOAuth(account=account))


@pytest.fixture
async def vertex(fake_upstream, oauth) -> FakeVertex:
    return await fake_upstream(FakeVertex(oauth=oauth))
