"""Fixtures of the azure adapter's tests: the fake Azure OpenAI resource and the fake
Microsoft Entra ID token endpoint (``fake_azure``), served on loopback."""

from __future__ import annotations

import pytest

from .fake_azure import FakeAzure, FakeEntra


@pytest.fixture
async def entra(fake_upstream) -> FakeEntra:
    return await fake_upstream(FakeEntra())


@pytest.fixture
async def azure(fake_upstream, entra) -> FakeAzure:
    return await fake_upstream(FakeAzure(entra=entra))
