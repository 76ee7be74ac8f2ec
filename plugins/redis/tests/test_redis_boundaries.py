"""Where the Redis shared state sits: its plugin registers the ``redis`` kind, which
``[gateway] redis`` picks, and its client stays inside ``plugins/redis/`` (the core
depends on no Redis client; a gateway without Redis never imports it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from gateway_core.config import Config
from gateway_core.runtime.plugins import collect
from relaygate_redis.kind import RedisKind

ROOT = Path(__file__).resolve().parents[3]
CLIENT_HOME = ROOT / "plugins" / "redis"


def test_redis_is_picked_by_the_configuration():
    registry = collect(Config())
    assert isinstance(registry.shared_state_kind(Config(redis="redis://127.0.0.1:6379/0")), RedisKind)
    assert registry.shared_state_kind(Config()).name == "in-process"


def test_a_gateway_without_redis_never_imports_the_client(tmp_path):
    code = (
        "import sys; from gateway_core.config import Config; from gateway_core.runtime.plugins import collect; "
        "collect(Config()).shared_state_kind(Config()); import relaygate_redis.plugin; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'redis'))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_the_client_is_imported_only_by_the_redis_plugin():
    importers = []
    for folder in (ROOT / "gateway_core", *ROOT.glob("adapters/*/gateway_*"), ROOT / "console" / "gateway_console"):
        for path in folder.rglob("*.py"):
            if CLIENT_HOME in path.parents:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                if any(name.split(".")[0] == "redis" for name in names):
                    importers.append(str(path.relative_to(ROOT)))
    assert importers == []


def test_the_core_depends_on_no_redis_client():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.split(">")[0].split("=")[0].strip() == "redis"], project["dependencies"]
    assert project["optional-dependencies"]["redis"] == ["relaygate-redis"]
    plugin = tomllib.loads((CLIENT_HOME / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("redis>=") for d in plugin["dependencies"])
    assert plugin["entry-points"]["relaygate.infrastructure"] == {"redis": "relaygate_redis.plugin"}
