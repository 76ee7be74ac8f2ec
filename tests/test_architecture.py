"""The structure the design promises, checked from the source: plugins import only the
public API, no core module passes 400 lines, SQLite stays inside the store, the core
names no provider, ``import gateway_core`` loads only the contract, the top level of
gateway_core/ is the public contract, docs/architecture.md's map lists every module, and
no import circle forms even when the imports made for type hints alone count. The layers
and the run-time import cycle are import-linter's (tests/test_layers.py)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import gateway_core

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "gateway_core"
PLUGIN_PACKAGES = sorted([*ROOT.glob("adapters/*/gateway_*"), ROOT / "console" / "gateway_console", CORE / "adapter_template" / "relaygate_skeleton"])
MAX_LINES = 400
# What an operator of the SQLite gateway does not install: plugin distributions
# (plugins/*) or extras of the core, never its dependencies (distribution names; a
# prefix ending in "-" names a family). uvicorn and httptools: `serve --server uvicorn`.
NOT_CORE_DEPENDENCIES = ("asyncpg", "psycopg", "redis", "prometheus-client", "opentelemetry-", "uvicorn", "httptools")
# their import names, and the one core module that may import each (None: none may)
OPTIONAL_IMPORTS = {"asyncpg": None, "psycopg": None, "redis": None, "prometheus_client": None, "opentelemetry": None,
                    "uvicorn": "gateway_core/runtime/server_uvicorn.py", "httptools": "gateway_core/runtime/server_uvicorn.py"}  # fmt: skip
PROVIDER_NAMES = re.compile(r"openai|anthropic|gemini|google|claude|\bgpt", re.IGNORECASE)

# Imports the architecture step is still moving (issue 12); each entry must still be
# true, so the list can only shrink. Nothing may be added to it.
PENDING_PRIVATE_IMPORTS: set[tuple[str, str]] = set()
PENDING_SQLITE_OUTSIDE_STORE: set[str] = set()


def python_files(folder: Path) -> Iterator[Path]:
    """The package's modules: not its tests, and (for the core) not the adapter
    template it ships as data, which is checked as a plugin package of its own."""
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).parts
        if "tests" not in parts and "adapter_template" not in parts:
            yield path


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> Iterator[str]:
    """Absolute names of the modules ``path`` imports (``from x import y`` gives ``x.y``
    when ``x.y`` is a module, else ``x``), inside functions and under ``if TYPE_CHECKING:`` too."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            yield f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base


def _is_module(name: str) -> bool:
    if not name.startswith("gateway_core"):
        return False
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def private_imports() -> set[tuple[str, str]]:
    public = set(gateway_core.PUBLIC_MODULES)
    found = set()
    for package in PLUGIN_PACKAGES:
        where = str(package.relative_to(ROOT))
        for path in python_files(package):
            own = module_name(package)  # its relative imports resolve under its own name
            for imported in imported_modules(path):
                if imported.startswith("gateway_core") and imported not in public and not imported.startswith(own):
                    found.add((where, imported))
    return found


def test_plugins_import_only_public_core_modules():
    found = private_imports()
    new = sorted(found - PENDING_PRIVATE_IMPORTS)
    assert not new, f"plugins import non-public core modules (see gateway_core.PUBLIC_MODULES): {new}"
    gone = sorted(PENDING_PRIVATE_IMPORTS - found)
    assert not gone, f"no longer imported: remove from PENDING_PRIVATE_IMPORTS: {gone}"


# What one plugin distribution may import of another, besides the core's public modules:
# the other's documented extension point (and nothing else of it). An adapter that
# imports another adapter's module depends on that distribution (its pyproject says so).
ADAPTER_EXTENSION_POINTS: dict[str, set[str]] = {
    "gateway_azure": {"gateway_openai.channel"},  # OpenAIChannel.upstream_url / auth_headers (docs/adapters/openai.md)
    # GeminiChannel.upstream_url / auth_headers / count_body, AnthropicChannel.upstream_request / auth_headers
    "gateway_vertex": {"gateway_gemini.channel", "gateway_anthropic.channel"},
    "gateway_bedrock": {"gateway_anthropic.channel"},  # AnthropicChannel … post / stream_frames, FrameDecoder (Claude's InvokeModel)
}


def imports_of_other_plugins() -> dict[str, set[str]]:
    """Per plugin package, the modules of other plugin packages it imports."""
    names = {package.name for package in PLUGIN_PACKAGES}  # the import names: gateway_openai …
    found: dict[str, set[str]] = {}
    for package in PLUGIN_PACKAGES:
        for path in python_files(package):
            for imported in imported_modules(path):
                top = imported.split(".")[0]
                if top in names and top != package.name:
                    found.setdefault(package.name, set()).add(imported)
    return found


def test_plugins_import_other_plugins_only_through_their_extension_points():
    found = imports_of_other_plugins()
    beyond = {package: sorted(modules - ADAPTER_EXTENSION_POINTS.get(package, set())) for package, modules in found.items()}
    beyond = {package: modules for package, modules in beyond.items() if modules}
    assert not beyond, f"plugins import other plugins beyond their documented extension points: {beyond}"
    assert found.get("gateway_azure") == {"gateway_openai.channel"}  # the dependencies between adapters, explicit
    assert found.get("gateway_vertex") == {"gateway_gemini.channel", "gateway_anthropic.channel"}
    assert found.get("gateway_bedrock") == {"gateway_anthropic.channel"}


def test_a_plugin_importing_another_declares_its_distribution():
    for package in ADAPTER_EXTENSION_POINTS:
        folder = next(p for p in PLUGIN_PACKAGES if p.name == package).parent
        project = (folder / "pyproject.toml").read_text()
        for module in ADAPTER_EXTENSION_POINTS[package]:
            other = next(p for p in PLUGIN_PACKAGES if p.name == module.split(".")[0]).parent
            name = re.search(r'^name = "([^"]+)"', (other / "pyproject.toml").read_text(), re.M)
            assert name and f'"{name.group(1)}"' in project, f"{folder.name}/pyproject.toml must depend on {name and name.group(1)}"


def test_public_modules_exist_and_are_documented():
    hooks_doc = (ROOT / "docs" / "hooks.md").read_text()
    for name in gateway_core.PUBLIC_MODULES:
        assert _is_module(name), name
        assert f"`{name}`" in hooks_doc, f"{name} is public but docs/hooks.md does not list it"


@pytest.mark.parametrize("path", list(python_files(CORE)), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_core_module_passes_400_lines(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_LINES}): split it"


def test_sqlite_stays_inside_the_store():
    found = set()
    for folder in (CORE, *PLUGIN_PACKAGES):
        for path in python_files(folder):
            relative = str(path.relative_to(ROOT))
            if relative.startswith("gateway_core/store/"):
                continue
            if {"sqlite3", "sqlite_utils"} & {m.split(".")[0] for m in imported_modules(path)}:
                found.add(relative)
    new = sorted(found - PENDING_SQLITE_OUTSIDE_STORE)
    assert not new, f"sqlite3 or sqlite_utils imported outside gateway_core/store/: {new}"
    gone = sorted(PENDING_SQLITE_OUTSIDE_STORE - found)
    assert not gone, f"no longer importing SQLite: remove from PENDING_SQLITE_OUTSIDE_STORE: {gone}"


def test_the_core_names_no_provider():
    named = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in python_files(CORE)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PROVIDER_NAMES.search(line)
    ]
    assert not named, "the core names a provider:\n" + "\n".join(named)


def test_import_gateway_core_loads_only_the_contract():
    code = "import sys, gateway_core; print(' '.join(sorted(m for m in sys.modules if m.startswith('gateway_core'))))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert not {m for m in loaded if m.startswith(("gateway_core.store", "gateway_core.commands"))}, loaded
    assert not loaded & {"gateway_core.commands.cli", "gateway_core.runtime.app", "gateway_core.runtime.services", "gateway_core.request.relay", "gateway_core.runtime.plugins"}, loaded
    assert len(loaded) <= 20, sorted(loaded)


def undesired(requirements: list[str]) -> list[str]:
    """The requirements that name a distribution of :data:`NOT_CORE_DEPENDENCIES`."""
    names = [(requirement, re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-"))
             for requirement in requirements]  # fmt: skip
    return [requirement for requirement, name in names
            if any(name.startswith(banned) if banned.endswith("-") else name == banned for banned in NOT_CORE_DEPENDENCIES)]  # fmt: skip


def test_the_core_depends_on_no_database_driver_redis_client_metrics_tracing_or_optional_server():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not undesired(project["dependencies"]), undesired(project["dependencies"])
    extras = project["optional-dependencies"]
    assert {"postgres", "redis", "metrics", "tracing", "uvicorn"} <= set(re.findall(r"\w+", extras["all"][0].partition("[")[2]))
    assert undesired(["prometheus_client>=0.20", "opentelemetry-sdk", "Redis[hiredis]>=5", "uvicorn", "asyncpg>=0.29; python_version>'3'"]) == [
        "prometheus_client>=0.20", "opentelemetry-sdk", "Redis[hiredis]>=5", "uvicorn", "asyncpg>=0.29; python_version>'3'"
    ]  # the check can fail
    assert undesired(["starlette>=1.0", "redis-lock-free-thing"]) == []


def test_the_core_imports_the_optional_libraries_only_where_they_are_optional():
    found = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for path in python_files(CORE)
        for name in imported_modules(path)
        if name.split(".")[0] in OPTIONAL_IMPORTS and OPTIONAL_IMPORTS[name.split(".")[0]] != str(path.relative_to(ROOT))
    )
    assert not found, found


# Folders of the core that are neither public nor a room: the adapter template is data.
DATA_FOLDERS = {"adapter_template"}
# The internal packages at the top of gateway_core/ (docs/architecture.md's module map):
# everything that is not the public contract lives in one of them.
ROOMS = {"base", "request", "routing", "runtime", "store", "policies", "shared"}
MAP_ROW = re.compile(r"^\| `(\S+)` \| .+ \| (.+) \|$")


def top_level_names() -> set[str]:
    """The modules and packages at the top of gateway_core/ (``__init__``, ``__main__`` aside)."""
    return {
        path.stem if path.is_file() else path.name
        for path in CORE.iterdir()
        if (path.suffix == ".py" and path.stem not in ("__init__", "__main__")) or (path / "__init__.py").exists()
    }


def test_the_top_level_is_the_public_contract():
    public = {name.split(".")[1] for name in gateway_core.PUBLIC_MODULES if name.count(".") >= 1}
    rooms = {name for name in top_level_names() if (CORE / name / "__init__.py").exists()} - public
    assert rooms == ROOMS, f"the core's internal packages are not the rooms of the map: {sorted(rooms ^ ROOMS)}"
    contract = top_level_names() - rooms
    assert contract == public, f"not public, so into a room: {sorted(contract - public)}; public but missing: {sorted(public - contract)}"
    assert not {path.name for path in CORE.iterdir() if path.is_dir() and not (path / "__init__.py").exists() and path.name != "__pycache__"} - DATA_FOLDERS


def architecture_map() -> dict[str, set[str]]:
    """docs/architecture.md's module map: each folder of the core and the modules it lists."""
    text = (ROOT / "docs" / "architecture.md").read_text().partition("## Module map")[2]
    return {match[1].rstrip("/"): set(re.findall(r"`(\w+)`", match[2])) for line in text.splitlines() if (match := MAP_ROW.match(line))}


def test_every_core_module_appears_in_the_architecture_map():
    listed = architecture_map()
    missing = []
    for path in python_files(CORE):
        folder = str(path.parent.relative_to(CORE)).replace(".", "gateway_core")
        if path.stem not in {"__init__", "__main__"} and path.stem not in listed.get(folder, set()):
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"docs/architecture.md's module map leaves out: {missing}"
    folders = {str(path.relative_to(CORE)) for path in CORE.iterdir() if (path / "__init__.py").exists()}
    assert set(listed) == folders | {"gateway_core"}, sorted(set(listed) ^ (folders | {"gateway_core"}))



# The one circle the core keeps when the imports under ``if TYPE_CHECKING:`` count too
# (none of them runs: tests/test_layers.py finds no cycle at run time). Everything else the
# contract names in its hints is a Protocol or a value of a module below it (the Gateway's
# ChannelHealthView and Registrations, the command kit's CommandRegistry, the request
# context's Admitted and PendingWrite). This one stays: the shared-state contract hands a
# kind the channels' HealthBoard, whose ``shared`` is the port the kind returns, and that
# port is given the board's Leases, whose route, probes and permit the Redis plugin reads.
TYPE_ONLY_CIRCLES = [{"gateway_core.routing.health", "gateway_core.shared_state"}]


def core_imports() -> dict[str, set[str]]:
    """Each core module and the core modules it imports, type-only and deferred imports included."""
    modules = {module_name(path): path for path in python_files(CORE)}
    return {name: {imported for imported in imported_modules(path) if imported in modules and imported != name} for name, path in modules.items()}


def import_circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The circles of ``graph``: its strongly connected components of more than one
    module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while not component or module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                circles.append(component)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def describe(circles: list[set[str]], graph: dict[str, set[str]]) -> str:
    return "\n".join(f"{len(circle)} modules: " + "; ".join(f"{m} -> {sorted(graph[m] & circle)}" for m in sorted(circle)) for circle in circles)


def test_no_import_circle_even_through_type_hints():
    graph = core_imports()
    circles = import_circles(graph)
    assert sorted(map(sorted, circles)) == sorted(map(sorted, TYPE_ONLY_CIRCLES)), (
        "an import circle (type-only imports counted) other than TYPE_ONLY_CIRCLES: name a Protocol or a value"
        " of a module below instead of the module above\n" + describe(circles, graph)
    )


def test_the_circle_finder_finds_a_circle_through_the_contract():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    graph = core_imports()
    graph["gateway_core.gateway"].add("gateway_core.runtime.registry")  # the Gateway naming the concrete registry again
    grown = [circle for circle in import_circles(graph) if "gateway_core.gateway" in circle]
    assert grown and {"gateway_core.hookspecs", "gateway_core.policy", "gateway_core.runtime.registry"} <= grown[0]
