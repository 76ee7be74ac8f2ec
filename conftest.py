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
  ``db_url``'s PostgreSQL case) or a provider: one that uses the adapters' fakes
  or the adapters (the fixtures ``adapter_fakes``, ``bundled_adapters``), whose
  module imports another distribution of the repository (or one of their
  dependencies), or whose code (its own, and that of the helpers, classes and
  fixtures of its module and conftest it reaches) names a module of another
  distribution or a provider's SDK.
- ``kernel``: the rest: the core's tests on the SQLite store, with the test kit's
  ``fake`` protocol and channel type for a provider. ``make test-kernel`` passes with
  the core alone installed (``pip install -e '.[test]'``): a run that selects
  neither ``plugins``, ``browser`` nor ``e2e`` collects nothing under adapters/,
  console/ and plugins/, and a core test file that imports a distribution not
  installed is left out (the summary names it). A run of the kernel lane alone
  loads no installed plugin's entry point in its gateways, and checks at its end
  that it imported no module of another distribution.
"""

import ast
import importlib.util
import os
import re
import sys
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any

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
PROVIDER_FIXTURES = {"adapter_fakes", "bundled_adapters"}  # the adapters' fakes; the adapters themselves (tests/conftest.py)
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
    if names & PROVIDER_FIXTURES or imports_other_distributions(item) or reaches_other_distributions(item):
        return "plugins"
    return "kernel"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """What a run's lanes cannot select is not collected: the folders of the plugin
    distributions and of the end-to-end tests (a kernel run imports no adapter, and
    collects faster); a core test file importing a distribution that is not installed."""
    where = collection_path.relative_to(config.rootpath).as_posix() if collection_path.is_relative_to(config.rootpath) else ""
    markexpr = config.getoption("markexpr", "")
    if where.startswith(PLUGIN_PATHS) and not selects(markexpr, ("plugins", "browser")):
        return True
    if where.startswith(E2E_PATHS) and not selects(markexpr, ("e2e",)):
        return True
    if where.startswith("tests/") and (collection_path.is_dir() or collection_path.name.startswith("test_")):
        missing = missing_imports(collection_path)
        if missing:
            _LEFT_OUT.append(f"{where} (needs {', '.join(missing)})")
            return True
    return None


_LEFT_OUT: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _LEFT_OUT:
        terminalreporter.write_line(f"not collected, for distributions not installed: {'; '.join(_LEFT_OUT)}")


@pytest.fixture(scope="session", autouse=True)
def _kernel_lane_alone(request: pytest.FixtureRequest) -> Iterator[None]:
    """A run of the kernel lane alone ends with no module of another distribution
    imported that was not there when it started (pytest's own plugins of PostgreSQL
    and Redis are, when installed): checked in the process that ran the tests (each
    pytest-xdist worker), as the last test's teardown."""
    before = set(sys.modules)
    yield
    if getattr(request.session, "_relaygate_lanes", None) == {"kernel"}:
        loaded = sorted(name for name in set(sys.modules) - before if name.split(".")[0] in OTHER_PACKAGES)
        assert not loaded, f"the kernel lane imported modules of other distributions: {loaded[:8]}"


@pytest.fixture(autouse=True)
def _kernel_gateways_load_the_core_alone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a run of the kernel lane alone, a gateway loads the plugins the core alone
    would: the installed distributions' entry points are left out, as in an
    environment where only the core is installed (``pip install -e '.[test]'``), so
    that a kernel test needing an adapter fails here as it would there."""
    if getattr(request.session, "_relaygate_lanes", None) == {"kernel"}:
        from gateway_core.runtime import plugins

        monkeypatch.setattr(plugins, "installed_entry_points", lambda group=plugins.ENTRY_POINT_GROUP: [])


def selects(markexpr: str, lanes: Iterable[str]) -> bool:
    """Whether ``-m markexpr`` can select a test of one of ``lanes`` (no expression: every lane)."""
    if not markexpr:
        return True
    from _pytest.mark.expression import Expression  # pytest's own reading of -m

    expression = Expression.compile(markexpr)
    return any(expression.evaluate(lambda name, lane=lane, **kwargs: name == lane) for lane in lanes)


def _other_packages(root: Path) -> tuple[frozenset[str], frozenset[str]]:
    """The import packages of the repository's other distributions (adapters, console,
    plugins), and the names their own dependencies may be imported by."""
    folders = [*root.glob("adapters/*/*/__init__.py"), *root.glob("plugins/*/*/__init__.py"), *root.glob("console/*/__init__.py")]
    packages = frozenset({init.parent.name for init in folders if init.parent.name != "tests"})
    needed: set[str] = set()
    for project in [*root.glob("adapters/*/pyproject.toml"), *root.glob("plugins/*/pyproject.toml"), root / "console/pyproject.toml"]:
        for requirement in tomllib.loads(project.read_text()).get("project", {}).get("dependencies", []):
            name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()
            if not name.startswith("relaygate"):
                needed |= {name.replace("-", "_"), name.split("-")[0]}
    return packages, frozenset(needed)


OTHER_PACKAGES, THEIR_DEPENDENCIES = _other_packages(Path(__file__).resolve().parent)
PROVIDER_SDKS = frozenset({"openai", "anthropic", "google"})  # a client of a provider's protocol


def _foreign(value: Any) -> bool:
    name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
    return isinstance(name, str) and name.split(".")[0] in OTHER_PACKAGES | PROVIDER_SDKS


def imports_other_distributions(item: pytest.Item) -> bool:
    """Whether a test's module imports, at its top, a module of another distribution or
    of their dependencies (with only the core installed, it is not even collected)."""
    module = getattr(item, "module", None)
    found = getattr(module, "_relaygate_imports_others", None)
    if found is None and module is not None:
        found = any(_foreign(value) or (isinstance(value, ModuleType) and value.__name__.split(".")[0] in THEIR_DEPENDENCIES)
                    for value in vars(module).values())  # fmt: skip
        module._relaygate_imports_others = found
    return bool(found)


def reaches_other_distributions(item: pytest.Item) -> bool:
    """Whether a test's code names a module of another distribution or a provider's
    SDK: its function's and fixtures' code, and that of the functions and classes of
    their own modules they name, transitively. (An adapter named only as a string,
    ``seed.channel(type="demo")``, is not seen: such a test asks for the fixture
    ``bundled_adapters``.)"""
    function = getattr(item, "function", None)
    if function is None:
        return False
    roots: list[Any] = [function]
    for defs in getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).values():
        roots += [fixturedef.func for fixturedef in defs if not fixturedef.baseid.startswith(("adapters", "console", "plugins"))]
    seen: set[int] = set()
    return any(_reaches(root, seen) for root in roots)


def _reaches(value: Any, seen: set[int]) -> bool:
    if id(value) in seen:
        return False
    seen.add(id(value))
    if _foreign(value) or (isinstance(value, type) and any(_foreign(base) for base in value.__mro__)):
        return True
    if isinstance(value, type):
        home = sys.modules.get(value.__module__)
        return any(_reaches(member, seen) for member in vars(value).values() if getattr(member, "__module__", None) == getattr(home, "__name__", ""))
    function = getattr(value, "__func__", value)
    if not isinstance(function, FunctionType):
        return False
    return _code_reaches(function.__code__, function.__globals__, seen)


def _code_reaches(code: CodeType, globals_: dict[str, Any], seen: set[int]) -> bool:
    module = globals_.get("__name__")
    for name in code.co_names:
        if name.split(".")[0] in OTHER_PACKAGES | PROVIDER_SDKS:  # an import inside the function
            return True
        value = globals_.get(name)
        if value is None:
            continue
        if _foreign(value):
            return True
        if getattr(value, "__module__", None) == module and _reaches(value, seen):
            return True
    return any(isinstance(const, CodeType) and _code_reaches(const, globals_, seen) for const in code.co_consts)


def missing_imports(path: Path) -> list[str]:
    """What a test file (or a folder's conftest.py) imports at its top of the other
    distributions and their dependencies that is not installed."""
    if path.is_dir():
        path = path / "conftest.py"
        if not path.exists():
            return []
    try:
        tree = ast.parse(path.read_bytes())
    except SyntaxError:
        return []  # pytest reports it
    wanted = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            wanted |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            wanted.add(node.module.split(".")[0])
    return sorted(name for name in wanted & (OTHER_PACKAGES | THEIR_DEPENDENCIES) if importlib.util.find_spec(name) is None)


def pytest_configure(config: pytest.Config) -> None:
    for lane, meaning in LANES.items():
        config.addinivalue_line("markers", f"{lane}: {meaning}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    name_each_test_once(items)
    lanes: dict[str, str] = {}
    for item in items:
        lane = lane_of(item, config.rootpath)
        item.add_marker(lane)
        if item.path.parent.name == "container" or WHEEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            # one worker builds the wheels and the image, once: pytest-xdist's --dist loadgroup
            # keeps ids ending in "@group" together (its own xdist_group marker sets the
            # id through a field pytest 9 no longer reads)
            rename(item, item.name + "@wheels")
        lanes[item.nodeid] = lane
    items.sort(key=lambda item: RUN_ORDER.index(lanes[item.nodeid]))


# The order the lanes run in (a stable sort: within a lane, the order of collection).
# pytest-xdist hands the tests out in this order (after the groups, the largest
# first), a few at a time to whichever worker is free: the slow lanes (processes
# end to end, Chromium) start first, and the kernel's many short tests come last,
# so that the workers finish together instead of one waiting on a long test begun
# at the end.
RUN_ORDER = ("e2e", "browser", "plugins", "kernel")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The lanes of the tests this process runs (after ``-m`` deselected the rest)."""
    session._relaygate_lanes = {lane for item in session.items for lane in LANES if item.get_closest_marker(lane)}  # type: ignore[attr-defined]


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
