"""Pytest fixtures of the test kit, available to every test once relaygate is installed.

- ``relaygate_config``: a :class:`Config` on a fresh store file in ``tmp_path``.
- ``seed``: a :class:`gateway_core.testing.Seed` for that store.
- ``start_gateway``: starts a :class:`gateway_core.testing.GatewayThread` for that
  store (call it after seeding); stopped at the end of the test.
"""

from __future__ import annotations

import pytest

from .config import Config
from .testing import GatewayThread, Seed


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"))


@pytest.fixture
def seed(relaygate_config) -> Seed:
    return Seed(relaygate_config)


@pytest.fixture
def start_gateway(relaygate_config):
    started: list[GatewayThread] = []

    def start(config: Config | None = None, **kwargs) -> GatewayThread:
        gateway = GatewayThread(config or relaygate_config, **kwargs).start()
        started.append(gateway)
        return gateway

    yield start
    for gateway in reversed(started):
        gateway.stop()
