"""Hypothesis profiles for the property tests of every package: ``relaygate`` (the
normal suite: few examples, so it stays fast) and ``fuzz`` (``make fuzz``: many);
``HYPOTHESIS_PROFILE`` picks one. No example database is written."""

import os

from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much]}
settings.register_profile("relaygate", max_examples=int(os.environ.get("RELAYGATE_EXAMPLES", "25")), **_COMMON)
settings.register_profile("fuzz", max_examples=int(os.environ.get("RELAYGATE_EXAMPLES", "1500")), **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "relaygate"))
