"""Where the PostgreSQL store sits: its plugin's store kind serves ``postgresql://``
URLs, it implements the port, and its driver stays inside ``plugins/postgres/``
(the core depends on no driver; an embedded installation never imports it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from gateway_core.store.request_store import RequestStore
from gateway_core.store import Store
from gateway_core.testing.stores import open_store
from relaygate_postgres.store import PostgresStore

ROOT = Path(__file__).resolve().parents[3]
DRIVER_HOME = ROOT / "plugins" / "postgres"


def test_open_store_picks_the_store_by_url():
    for url in ("postgresql://relaygate:pw@db.internal:6432/gw", "postgres://relaygate@127.0.0.1/gw"):
        store = open_store(url, [])
        assert isinstance(store, PostgresStore) and isinstance(store, RequestStore) and store.dsn == url
    assert open_store("postgresql://relaygate:pw@db.internal:6432/gw", []).name == "PostgreSQL at db.internal:6432/gw"
    assert isinstance(open_store("sqlite:///data/gw.db", []), Store) and isinstance(open_store("gw.db", []), Store)


def test_an_embedded_installation_never_imports_the_driver(tmp_path):
    code = (
        "import sys; from gateway_core.testing.stores import open_store; "
        f"open_store({str(tmp_path / 'gw.db')!r}, []); print('asyncpg' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_the_driver_is_imported_only_by_the_postgresql_store():
    importers = []
    for folder in (ROOT / "gateway_core", *ROOT.glob("adapters/*/gateway_*"), ROOT / "console" / "gateway_console"):
        for path in folder.rglob("*.py"):
            if DRIVER_HOME in path.parents:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                if any(name.split(".")[0] == "asyncpg" for name in names):
                    importers.append(str(path.relative_to(ROOT)))
    assert importers == []


def test_the_core_depends_on_no_driver():
    import tomllib

    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [d for d in core if d.split(">")[0].split("=")[0].strip() in {"asyncpg", "psycopg", "psycopg2"}], core
    plugin = tomllib.loads((DRIVER_HOME / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("asyncpg") for d in plugin["dependencies"])
    assert plugin["entry-points"]["relaygate.infrastructure"] == {"postgres": "relaygate_postgres.plugin"}
