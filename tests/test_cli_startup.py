"""``relaygate`` starts quickly: ``--help``, ``--version`` and the admin commands
import what they run and no more.

Timing on a shared, loaded machine is noise, so these tests check what a
command imports, run in a fresh interpreter with every installed plugin
loaded: no HTTP client or server, no database driver but SQLite's when the
command reads the database, no adapter's conversion code (nor an adapter's channel
type to list a channel without keys), no console pages, no logging library and no
importlib.metadata. The figures are in docs/configuration.md ("The relaygate command").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gateway_core.commands.cli import main
from gateway_core.config import Config, ConfigError
from gateway_core.hookspecs import hookimpl
from gateway_core.runtime.plugins import ENTRY_POINT_GROUP, INFRASTRUCTURE_GROUP, collect, installed_entry_points

# Run main(argv) as the console script does; print the modules loaded by then.
PROGRAM = """
import json, sys
from gateway_core.commands.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}), file=sys.stderr)
"""

# Never needed to print help or versions, nor to read the database: the server, HTTP on
# either side, the other stores' and shared state's drivers, metrics, the console's pages.
HEAVY = ("aiohttp", "starlette", "hypercorn", "uvicorn", "uvloop", "asyncpg", "redis", "jinja2", "prometheus_client",
         "opentelemetry", "gateway_core.runtime.app", "gateway_core.runtime.server", "gateway_core.request.relay", "gateway_core.runtime.services",
         "gateway_core.channel_type", "gateway_core.client_protocol", "relaygate_api.mount", "gateway_console.app")  # fmt: skip
# nor, for help and versions, the database and the admin layer
STORE = ("sqlite_utils", "sqlite3", "cattrs", "cryptography", "gateway_core.admin.context", "gateway_core.store.sqlite_store", "gateway_core.store.migrations")
# nor, for any command that does not log, the logging library (and the pretty-printer it loads when
# installed), nor importlib.metadata (the plugins' entry points are read without it)
UNNEEDED = ("structlog", "rich", "importlib.metadata", "email")


def _adapter_packages() -> set[str]:
    """The top-level packages of the installed adapters (every relaygate plugin but the console)."""
    return {ep.value.split(".")[0] for ep in installed_entry_points()} - {"gateway_console"}


def relaygate(tmp_path, *argv):
    """Run ``relaygate argv`` in a fresh interpreter, in an empty folder (every
    installed plugin loaded): (exit status, stdout, the modules it imported)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYGATE_")}
    env["RELAYGATE_HOME"] = str(tmp_path / "home")
    done = subprocess.run([sys.executable, "-c", PROGRAM, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["status"], done.stdout, set(report["modules"])


def loaded(modules: set[str], names: tuple[str, ...] | set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == name or m.startswith(name + ".") for name in names))


def conversion_modules(modules: set[str]) -> list[str]:
    """An adapter's modules other than its package and its plugin module (the entry point)."""
    return sorted(m for m in loaded(modules, _adapter_packages()) if "." in m and not m.endswith(".plugin"))


@pytest.mark.parametrize("argv", [("--help",), ("--version",), ("user", "--help")])
def test_help_and_versions_import_neither_server_nor_store_nor_adapters(tmp_path, argv):
    status, out, modules = relaygate(tmp_path, *argv)
    assert status == 0 and out
    assert not loaded(modules, HEAVY + STORE + UNNEEDED)
    assert not conversion_modules(modules)


def test_help_still_lists_every_command_and_version_every_plugin(tmp_path):
    _, out, _ = relaygate(tmp_path, "--help")
    for command in ("init", "serve", "user", "key", "channel", "price", "logs", "config", "plugins"):
        assert f"    {command}" in out
    _, out, _ = relaygate(tmp_path, "--version")
    named = {name for line in out.splitlines() if "(plugins: " in line for name in line.split("(plugins: ")[1].rstrip(")").split(", ")}
    assert named == {ep.name for group in (ENTRY_POINT_GROUP, INFRASTRUCTURE_GROUP) for ep in installed_entry_points(group)}


def test_the_contract_and_the_admin_layer_offer_every_name_they_list():
    """Their names are imported when first read: each listed in ``__all__`` resolves."""
    import gateway_core
    import gateway_core.admin

    for package in (gateway_core, gateway_core.admin):
        missing = [name for name in package.__all__ if not hasattr(package, name)]
        assert not missing, f"{package.__name__} lists names it cannot give: {missing}"
    with pytest.raises(AttributeError):
        gateway_core.NoSuchName  # noqa: B018


@pytest.fixture
def initialized(tmp_path):
    """A home with a database made by ``relaygate init`` (when the demo adapter is installed)."""
    status, _, _ = relaygate(tmp_path, "init")
    if status != 0:
        pytest.skip("relaygate init needs the demo adapter")
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [("user", "list"), ("key", "list", "admin"), ("token", "list"), ("team", "list"), ("group", "list"), ("wallet", "show", "admin"),
     ("logs",), ("price", "list"), ("config", "show"), ("user", "add", "bob"), ("price", "set", "m", "--input", "1", "--output", "2")],
)  # fmt: skip
def test_admin_commands_import_the_store_but_no_adapter_nor_server(initialized, argv):
    status, out, modules = relaygate(initialized, *argv)
    assert status == 0 and out
    assert not loaded(modules, HEAVY + UNNEEDED)
    assert not conversion_modules(modules)


def test_channel_commands_import_no_adapter_even_for_a_channel_without_keys(initialized):
    """A keyless channel's type is known to need no key from its plugin's
    ``KEYLESS_CHANNEL_TYPES``; an edit that touches neither the URL nor the settings
    validates nothing of the type: neither imports an adapter."""
    assert relaygate(initialized, "channel", "add", "up", "--type", "openai", "--base-url", "http://127.0.0.1:9", "--api-key", "sk-x", "--models", "m")[0] == 0
    for argv in (("channel", "list"), ("channel", "edit", "up", "--weight", "2"), ("channel", "edit", "demo", "--priority", "1")):
        status, out, modules = relaygate(initialized, *argv)
        assert status == 0 and out
        assert not loaded(modules, HEAVY + UNNEEDED)
        assert not conversion_modules(modules)
    status, out, _ = relaygate(initialized, "channel", "list")
    demo = next(line.split() for line in out.splitlines() if line.split()[1:2] == ["demo"])
    assert demo[6] == "ok" and demo[7] == "-"  # health ok, though it has no key: its type needs none


def test_the_declared_keyless_channel_types_are_those_that_need_no_key():
    registry = collect(Config())
    assert registry.keyless_channel_types == {name for name, channel_type in registry.channel_types.items() if not channel_type.needs_key}


def test_a_command_that_reads_the_channel_types_still_gets_them(initialized):
    status, out, modules = relaygate(initialized, "channel", "types")
    assert status == 0 and "demo" in out
    assert conversion_modules(modules)  # the adapters' channel types, imported now that they are read


class Recorder:
    """A plugin that counts the hooks run and adds a command."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @hookimpl
    def register_channel_types(self, register):
        self.calls.append("channel_types")

    @hookimpl
    def register_routes(self, register):
        self.calls.append("routes")

    @hookimpl
    def register_commands(self, register):
        self.calls.append("commands")

        def run(args, cli):
            print(f"types: {', '.join(sorted(cli.registry.channel_types)) or 'none'}")
            return 0

        register("tools types", "name the channel types", lambda parser: None, run)


def test_the_cli_runs_only_the_hooks_its_command_reads(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text("load = []\n")
    recorder = Recorder()
    assert main(["--help"], extra_plugins=[recorder]) == 0
    assert "tools" in capsys.readouterr().out and recorder.calls == ["commands"]
    recorder.calls.clear()
    assert main(["tools", "types"], extra_plugins=[recorder]) == 0
    assert capsys.readouterr().out == "types: none\n"
    assert recorder.calls == ["commands", "channel_types"]  # read by the command: collected once, then


def test_a_hook_failing_when_read_is_still_one_line(tmp_path, monkeypatch, capsys):
    class Broken:
        @hookimpl
        def register_channel_types(self, register):
            raise ConfigError("[plugins.broken] needs a key")

    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text("load = []\n")
    assert main(["--help"], extra_plugins=[Broken()]) == 0  # the help does not need it
    capsys.readouterr()
    assert main(["channel", "types"], extra_plugins=[Broken()]) == 2
    assert capsys.readouterr().err == "relaygate channel types: [plugins.broken] needs a key\n"
