"""What every package's tests share: Hypothesis profiles for the property tests
(``relaygate``, the normal suite: few examples, so it stays fast; ``fuzz``, ``make
fuzz``: many; ``HYPOTHESIS_PROFILE`` picks one; no example database is written), and
a data folder of each test's own (``RELAYGATE_HOME``), so that no test reads or
writes the user's."""

import os

import pytest
from hypothesis import HealthCheck, settings


@pytest.fixture(autouse=True)
def _relaygate_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RELAYGATE_HOME", str(tmp_path_factory.mktemp("relaygate-home")))
    yield
    from gateway_core.store.sealing import use_key_file

    use_key_file(None)  # the key file a test's command line or gateway named is not the next test's

_COMMON = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much]}
settings.register_profile("relaygate", max_examples=int(os.environ.get("RELAYGATE_EXAMPLES", "25")), **_COMMON)
settings.register_profile("fuzz", max_examples=int(os.environ.get("RELAYGATE_EXAMPLES", "1500")), **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "relaygate"))
