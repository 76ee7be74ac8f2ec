"""What every package's tests share: Hypothesis profiles for the property tests
(``relaygate``, the normal suite: few examples, so it stays fast; ``fuzz``, ``make
fuzz``: many; ``HYPOTHESIS_PROFILE`` picks one; no example database is written), and
a data folder of each test's own (``RELAYGATE_HOME``), so that no test reads or
writes the user's; and the lanes: each test is marked with one at collection (by its
folder and the fixtures it uses; no test file names its lane), so that ``pytest -m
kernel`` (``make test-kernel``) runs the core's tests alone, without PostgreSQL,
Redis, a browser, node or podman. ``make test`` runs every lane.

- ``e2e``: real processes end to end: the container image and compose file
  (tests/container/, podman), the real coding CLIs (tests/coding_clis/, node), the
  replicas on PostgreSQL and Redis (tests/replicas/), the wheels built and installed
  (tests/test_dist.py).
- ``browser``: a test that drives Chromium (the ``chromium`` fixture, or one that
  names ``CHROMIUM`` itself).
- ``plugins``: the first-party plugin distributions' tests (adapters/, console/,
  plugins/), and any core test that needs PostgreSQL or Redis (their fixtures, or
  ``db_url``'s PostgreSQL case).
- ``kernel``: the rest: the core's tests on the SQLite store.
"""

import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

LANES = {
    "kernel": "the core's tests, on SQLite: no PostgreSQL, Redis, browser, node or podman",
    "plugins": "the plugin distributions' tests (adapters, console, PostgreSQL, Redis) and core tests on PostgreSQL or Redis",
    "browser": "tests driving Chromium",
    "e2e": "real processes end to end: container image, coding CLIs, replicas, built wheels",
}
E2E_PATHS = ("tests/container", "tests/coding_clis", "tests/replicas", "tests/test_dist.py")
PLUGIN_PATHS = ("adapters", "console", "plugins")
BROWSER_FIXTURES = {"chromium"}
SERVICE_FIXTURES = {"relaygate_postgres_server", "relaygate_redis_prefix"}  # PostgreSQL, Redis
# the session's wheels, in a cache every process shares (tests/conftest.py), and the
# container image built from them (tests/container/, one tag): on one pytest-xdist worker
WHEEL_FIXTURES = {"built_wheels", "dependency_wheels"}


def lane_of(item: pytest.Item, root: Path) -> str:
    """The lane of one collected test (the first that fits, in the order above)."""
    where = item.path.relative_to(root).as_posix()
    names = set(getattr(item, "fixturenames", ()))
    function = getattr(item, "function", None)
    if where.startswith(E2E_PATHS):
        return "e2e"
    if names & BROWSER_FIXTURES or (function is not None and "CHROMIUM" in function.__code__.co_names):
        return "browser"
    params = getattr(getattr(item, "callspec", None), "params", {})
    if where.startswith(PLUGIN_PATHS) or names & SERVICE_FIXTURES or params.get("db_url") == "postgresql":
        return "plugins"
    return "kernel"


def pytest_configure(config: pytest.Config) -> None:
    for lane, meaning in LANES.items():
        config.addinivalue_line("markers", f"{lane}: {meaning}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    name_each_test_once(items)
    for item in items:
        item.add_marker(lane_of(item, config.rootpath))
        if item.path.parent.name == "container" or WHEEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            # one worker builds the wheels and the image, once: pytest-xdist's --dist loadgroup
            # keeps ids ending in "@group" together (its own xdist_group marker sets the
            # id through a field pytest 9 no longer reads)
            rename(item, item.name + "@wheels")


def name_each_test_once(items: list[pytest.Item]) -> None:
    """Schemathesis gives every operation's test one node id (plugins/api/tests/test_api_schema.py:
    84 tests, one id); pytest-xdist schedules by id, so it ran one of them and
    dropped the rest. Each such test gets its own name (``test[GET /path]``) as its
    id, and a repeated id left over stops the run."""
    counts = Counter(item.nodeid for item in items)
    for item in items:
        if counts[item.nodeid] > 1:
            rename(item, item.name)
    repeated = sorted(nodeid for nodeid, n in Counter(item.nodeid for item in items).items() if n > 1)
    if repeated:
        raise pytest.UsageError(f"tests sharing a node id (pytest-xdist would run one of each): {repeated[:5]}")


def rename(item: pytest.Item, name: str) -> None:
    """Give ``item`` the node id pytest gives a test of that name in its parent."""
    assert item.parent is not None
    item._id = item.parent.id.child(name)  # type: ignore[attr-defined]  # pytest 9's one field for it


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
