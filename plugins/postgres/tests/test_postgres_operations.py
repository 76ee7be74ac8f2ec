"""Operating a gateway on either store: the pool settings, ``relaygate migrate``
and the checks ``relaygate serve`` makes before it binds, through the real CLI
and a ``relaygate serve`` process."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import pytest

from gateway_core.commands.cli import main
from gateway_core.config import ConfigError, config_from_mapping
from gateway_core.runtime.plugins import collect
from gateway_core.store import Store
from gateway_core.testing.stores import open_store
from relaygate_postgres.store import PostgresStore
from gateway_core.testing import GatewayProcess

from .conftest import with_database

UNREACHABLE = "postgresql://postgres@127.0.0.1:1/relaygate"  # nothing listens on port 1


@pytest.fixture
def plugins_file(tmp_path) -> str:
    path = tmp_path / "plugins.toml"
    path.write_text('load = ["openai", "console"]\n[gateway]\ndb_pool_size = 4\ndb_timeout = 3\n', encoding="utf-8")
    return str(path)


def migration_names(plugins_file: str) -> list[str]:
    from gateway_core.config import load_config

    return [name for name, _ in collect(load_config(None, plugins_file)).migrations]


def test_pool_settings_are_read_and_checked():
    defaults = config_from_mapping({})
    assert (defaults.db_pool_size, defaults.db_timeout) == (10, 5.0)
    config = config_from_mapping({"gateway": {"db_pool_size": 3, "db_timeout": 0.5}})
    assert (config.db_pool_size, config.db_timeout) == (3, 0.5)
    for bad in ({"db_pool_size": 0}, {"db_pool_size": 2.5}, {"db_timeout": 0}, {"db_timeout": "5"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            config_from_mapping({"gateway": bad})


def test_open_store_hands_the_pool_settings_to_postgresql_only(tmp_path):
    store = open_store("postgresql://gw@db.internal:5432/gw", [], pool_size=3, timeout=1.5)
    assert isinstance(store, PostgresStore) and (store.max_size, store.timeout) == (3, 1.5)
    assert isinstance(open_store(f"sqlite:///{tmp_path / 'gw.db'}", [], pool_size=3, timeout=1.5), Store)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_migrate_applies_what_is_pending_then_nothing(kind, tmp_path, plugins_file, capsys, request):
    db = f"sqlite:///{tmp_path / 'gw.db'}" if kind == "sqlite" else request.getfixturevalue("pg_url")
    assert main(["migrate", "--db", db, "--plugins", plugins_file, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    names = migration_names(plugins_file)
    assert first["applied"] == names and any("console" in name for name in names)
    assert main(["migrate", "--db", db, "--plugins", plugins_file]) == 0
    assert capsys.readouterr().out.startswith("nothing to apply: the schema of ")


def test_migrate_prints_each_migration_it_applies(pg_url, plugins_file, capsys):
    assert main(["migrate", "--db", pg_url, "--plugins", plugins_file]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = migration_names(plugins_file)
    assert lines[:-1] == [f"applied {name}" for name in names]
    assert lines[-1].startswith(f"{len(names)} migration(s) applied to PostgreSQL at 127.0.0.1:")


def test_migrate_on_an_unreachable_server_says_so_in_one_line(plugins_file, capsys):
    assert main(["migrate", "--db", UNREACHABLE, "--plugins", plugins_file]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("relaygate migrate: PostgreSQL at 127.0.0.1:1/relaygate is unreachable")


def serve_fails(db: str, plugins_file: str) -> subprocess.CompletedProcess[str]:
    command = GatewayProcess(db, plugins_file=plugins_file).command
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_serve_refuses_a_database_older_than_the_code(pg_url, plugins_file):
    done = serve_fails(pg_url, plugins_file)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "is older than this code (pending: 0001_core, " in done.stderr and done.stderr.rstrip().endswith("run `relaygate migrate`")


def test_serve_refuses_an_unreachable_database_in_one_line(plugins_file):
    done = serve_fails(UNREACHABLE, plugins_file)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("relaygate serve: PostgreSQL at 127.0.0.1:1/relaygate is unreachable")


def test_serve_refuses_a_missing_database(pg_url, plugins_file):
    done = serve_fails(with_database(pg_url, "relaygate_no_such_database"), plugins_file)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "relaygate_no_such_database" in done.stderr


def test_serve_starts_once_migrated_and_sqlite_still_migrates_itself(pg_url, plugins_file, tmp_path):
    assert main(["migrate", "--db", pg_url, "--plugins", plugins_file]) == 0
    for db in (pg_url, str(tmp_path / "fresh.db")):
        with GatewayProcess(db, plugins_file=plugins_file) as gateway:
            with urllib.request.urlopen(gateway.url + "/healthz", timeout=5) as response:
                assert response.status == 200
