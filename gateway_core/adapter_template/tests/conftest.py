"""The kit's fixtures (``seed``, ``start_gateway``, ``fake_upstream``, ``examples``)
come with relaygate; these two make the gateway load this package's plugin
whether or not the package is installed, with the OpenAI protocol for clients."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from relaygate_skeleton import plugin


@pytest.fixture
def relaygate_config(relaygate_config: Any) -> Any:
    return attrs.evolve(relaygate_config, load=("openai",))  # installed plugins: only the OpenAI protocol


@pytest.fixture
def relaygate_plugins() -> list[Any]:
    return [plugin]  # this package's plugin, registered directly
