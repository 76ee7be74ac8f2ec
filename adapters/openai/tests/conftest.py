"""Fixtures of the openai adapter's tests: the fake upstream most tests call."""

from __future__ import annotations

import pytest

from gateway_openai.fake_upstream import FakeOpenAI


@pytest.fixture
async def upstream(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())
