"""The layers of the core, checked by import-linter: the contracts in pyproject.toml's
``[tool.importlinter]`` hold (the contract imports nothing internal but its own helpers in
``base/``, which import none of the rooms; the core imports no plugin; the request path
imports no admin operation, management API, console or command), each of them fails on
a deliberate violation, and the core has no import cycle at run time (on grimp's graph, import-linter's own)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

import gateway_core

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS = {contract["id"]: contract for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}


def lint_imports(root: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the gateway_core found first on the path from ``root``, with ``root``'s pyproject.toml."""
    command = [str(LINT_IMPORTS), "--no-cache", "--no-logo", *(arg for contract in contracts for arg in ("--contract", contract))]
    return subprocess.run(command, cwd=root, env={"PYTHONPATH": str(root), "PATH": str(LINT_IMPORTS.parent)}, capture_output=True, text=True, timeout=120)


def test_the_layer_contracts_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout, result.stdout


def test_the_contract_lists_every_public_top_level_module():
    top_level = {name for name in gateway_core.PUBLIC_MODULES if name.count(".") == 1 and (ROOT / name.replace(".", "/")).with_suffix(".py").exists()}
    assert set(CONTRACTS["contract"]["source_modules"]) == top_level | {"gateway_core"}


def test_the_kernel_contract_names_every_plugin():
    plugins = {path.name for path in [*ROOT.glob("plugins/*/relaygate_*"), *ROOT.glob("adapters/*/gateway_*"), ROOT / "console" / "gateway_console"] if (path / "__init__.py").exists()}
    assert plugins <= set(CONTRACTS["kernel"]["forbidden_modules"]), sorted(plugins - set(CONTRACTS["kernel"]["forbidden_modules"]))


@pytest.mark.parametrize(
    ("contract", "module", "line"),
    [
        ("contract", "gateway_core/model.py", "from gateway_core.routing import router"),
        ("contract", "gateway_core/config.py", "from gateway_core.store import writer"),
        ("base", "gateway_core/base/timeouts.py", "from gateway_core.request import context"),
        ("kernel", "gateway_core/routing/router.py", "import relaygate_redis"),
        ("kernel", "gateway_core/runtime/app.py", "import relaygate_api.mount"),
        ("request-path", "gateway_core/request/outcome.py", "from gateway_core.admin import keys"),
        ("request-path", "gateway_core/routing/probe.py", "import gateway_core.commands.cli"),
    ],
)
def test_a_deliberate_violation_breaks_its_contract(tmp_path, contract, module, line):
    shutil.copytree(ROOT / "gateway_core", tmp_path / "gateway_core", ignore=shutil.ignore_patterns("__pycache__", "adapter_template"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    assert lint_imports(tmp_path, contract).returncode == 0  # the copy keeps it
    with (tmp_path / module).open("a") as source:
        source.write(f"\n{line}  # a deliberate violation\n")
    result = lint_imports(tmp_path, contract)
    assert result.returncode == 1, result.stdout
    assert "1 broken" in result.stdout and module.removesuffix(".py").replace("/", ".") in result.stdout


def core_graph() -> grimp.ImportGraph:
    """The core's run-time imports, with what Python adds: importing a submodule first
    runs its package (the package's own modules excepted)."""
    graph = grimp.build_graph("gateway_core", exclude_type_checking_imports=True, cache_dir=None)
    for importer in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            package = imported.rpartition(".")[0]
            if package not in ("", "gateway_core") and not importer.startswith(package + ".") and importer != package:
                graph.add_import(importer=importer, imported=package)
    return graph


def find_cycle(graph: grimp.ImportGraph) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                return [importer, *back]
    return None


def test_the_core_has_no_import_cycle_at_run_time():
    cycle = find_cycle(core_graph())
    assert cycle is None, f"import cycle: {' -> '.join(cycle or [])}"


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    graph.add_import(importer="a", imported="b")
    graph.add_import(importer="b", imported="c")
    assert find_cycle(graph) is None
    graph.add_import(importer="c", imported="a")
    assert find_cycle(graph) == ["a", "b", "c", "a"]
