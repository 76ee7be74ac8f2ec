"""gateway_core.commands.scaffold.create_adapter: a new adapter package from the template,
which imports (from sys.path, installed nowhere), registers its channel type and
passes its own tests through the test kit."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gateway_core.config import Config
from gateway_core.runtime.plugins import collect
from gateway_core.commands.scaffold import TEMPLATE, create_adapter


@pytest.fixture
def generated(tmp_path: Path) -> Path:
    return create_adapter("tinyllm", tmp_path / "relaygate-tinyllm")


def test_the_package_is_renamed_throughout(generated):
    files = sorted(str(path.relative_to(generated)) for path in generated.rglob("*") if path.is_file())
    assert "relaygate_tinyllm/channel.py" in files and "tests/examples/chat_stream.ndjson" in files
    assert not [name for name in files if "skeleton" in name.lower() or "__pycache__" in name]
    for name in files:
        assert "skeleton" not in (generated / name).read_text().lower(), name
    project = tomllib.loads((generated / "pyproject.toml").read_text())
    assert project["project"]["name"] == "relaygate-tinyllm"
    assert project["project"]["entry-points"]["relaygate"] == {"tinyllm": "relaygate_tinyllm.plugin"}
    assert "class TinyllmChannel(ChannelType):" in (generated / "relaygate_tinyllm/channel.py").read_text()


def test_it_imports_from_sys_path_and_registers_its_channel_type(generated, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(generated))
    plugin = importlib.import_module("relaygate_tinyllm.plugin")
    try:
        registry = collect(Config(db_path=str(tmp_path / "r.db"), load=()), extra_plugins=[plugin])
        assert registry.channel_type("tinyllm").wire("chat") == "tinyllm"
    finally:
        for module in [m for m in sys.modules if m.startswith("relaygate_tinyllm")]:
            del sys.modules[module]


@pytest.mark.usefixtures("bundled_adapters")  # the template's tests call it with the openai protocol
def test_its_own_tests_pass_through_the_kit(generated):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(generated), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q"], cwd=generated, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "10 passed" in run.stdout


@pytest.mark.parametrize("name", ["", "Ollama", "my-llm", "9lives", "class", "ollama!"])
def test_a_bad_name_is_refused(name, tmp_path):
    with pytest.raises(ValueError, match="not a usable adapter name"):
        create_adapter(name, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_folder_in_use_is_refused(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="already exists and is not an empty folder"):
        create_adapter("tinyllm", tmp_path / "taken")
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["notes.txt"]
    (tmp_path / "empty").mkdir()
    assert create_adapter("tinyllm", tmp_path / "empty") == tmp_path / "empty"


def test_the_template_is_where_the_scaffold_looks():
    assert (TEMPLATE / "relaygate_skeleton" / "plugin.py").is_file()
    with pytest.raises(ValueError, match="no adapter template"):
        create_adapter("tinyllm", "unused", template=TEMPLATE / "missing")


def test_the_code_quoted_in_the_adapter_guide_is_the_templates():
    guide = (Path(__file__).resolve().parents[1] / "docs" / "writing-adapters.md").read_text(encoding="utf-8")
    quoted = 0
    for block in re.findall(r"^```(?:python|toml)\n(.*?)^```", guide, flags=re.M | re.S):
        first, _, body = block.partition("\n")
        if not first.startswith("# ") or " " in first[2:]:
            continue  # not a quote of a file
        source = (TEMPLATE / first[2:]).read_text(encoding="utf-8")
        assert body in source, f"docs/writing-adapters.md quotes {first[2:]} as it no longer is"
        quoted += 1
    assert quoted >= 7


def test_relaygate_new_adapter_creates_the_package_and_refuses_a_bad_name(tmp_path, capsys):
    from gateway_core.commands.cli import main

    target = tmp_path / "made"
    assert main(["--db", str(tmp_path / "r.db"), "new-adapter", "tinyllm", "--dir", str(target), "--json"]) == 0
    assert '"package": "relaygate_tinyllm"' in capsys.readouterr().out
    assert (target / "relaygate_tinyllm" / "channel.py").is_file()
    assert main(["--db", str(tmp_path / "r.db"), "new-adapter", "tinyllm", "--dir", str(target)]) == 2
    assert main(["--db", str(tmp_path / "r.db"), "new-adapter", "Bad-Name"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "relaygate new-adapter:" in err and "Traceback" not in err


def test_the_template_ships_in_the_wheel(tmp_path):
    root = Path(__file__).resolve().parents[1]
    source = tmp_path / "source"  # a copy: building leaves a build/ folder where it runs
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, source / name)
    shutil.copytree(root / "gateway_core", source / "gateway_core", ignore=shutil.ignore_patterns("__pycache__"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    import zipfile

    (wheel,) = tmp_path.glob("relaygate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {name.removeprefix("gateway_core/adapter_template/") for name in names if name.startswith("gateway_core/adapter_template/")}
    expected = {str(path.relative_to(TEMPLATE)) for path in TEMPLATE.rglob("*") if path.is_file() and "__pycache__" not in path.parts}
    assert expected and expected <= shipped, sorted(expected - shipped)
