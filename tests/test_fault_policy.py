"""``[gateway.redis_faults]``: what the gateway does, per kind of shared state, when
Redis cannot be reached, read from the configuration (``FaultPolicy``)."""

from __future__ import annotations

import pytest

from gateway_core.config import ConfigError, config_from_mapping
from gateway_core.ratelimit.faults import FaultPolicy


def test_fault_policy_is_read_per_kind():
    config = config_from_mapping({"gateway": {"redis_faults": {"breakers": "closed", "signin": "closed"}}})
    assert config.redis_faults == FaultPolicy(rate_limits="closed", channel_concurrency="closed", breakers="closed", signin="closed")
    assert config_from_mapping({"gateway": {"redis_fail_open": True}}).redis_faults.rate_limits == "open"
    with pytest.raises(ConfigError, match="must be \"open\" or \"closed\""):
        config_from_mapping({"gateway": {"redis_faults": {"rate_limits": "maybe"}}})
    with pytest.raises(ConfigError, match="knows rate_limits"):
        config_from_mapping({"gateway": {"redis_faults": {"limits": "open"}}})
