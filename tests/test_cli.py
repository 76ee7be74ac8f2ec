"""The ``relaygate`` command: in-process through ``main`` and through the console script."""

import io
import json
import time
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gateway_core import hookimpl
from gateway_core.channel_type import ChannelType
from gateway_core.commands.cli import main
from gateway_core.config import Config, ConfigError
from gateway_core.runtime.plugins import DEFAULT_PLUGINS, INFRASTRUCTURE_GROUP, collect, installed_entry_points
from gateway_core.secrets import hash_key, verify_password
from gateway_core.store import CORE_MIGRATIONS, Store, channels, keys, prices, users

RELAYGATE = Path(sys.executable).parent / "relaygate"
# `load = []`: only the core and the test plugins below, whatever is installed
# ([gateway] values are spelled out so the file does not depend on defaults).
PLUGINS_TOML = 'load = []\n[gateway]\nmax_body_bytes = 33554432\nmax_attempts = 3\n'


class FakeChannelType(ChannelType):
    def __init__(self, name):
        self.name = name

    def wire(self, endpoint):
        return "openai"

    async def send(self, exchange):  # pragma: no cover - never called here
        raise NotImplementedError

    def normalize_base_url(self, base_url):
        base_url = base_url.rstrip("/")
        return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


class ChannelTypesPlugin:
    @hookimpl
    def register_channel_types(self, register):
        register(FakeChannelType("demo"))
        register(FakeChannelType("fakeai"))


class GreetingPlugin:
    @hookimpl
    def register_commands(self, register):
        def configure(parser):
            parser.add_argument("who")

        def run(args, cli):
            cli.print_record({"hello": args.who, "db": cli.config.db_path}, text=f"hello {args.who}")
            return 0

        register("tools greet", "say hello", configure, run)


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``cli(*argv)`` → (status, stdout, stderr), on a fresh database."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELAYGATE_DB", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    (tmp_path / "plugins.toml").write_text(PLUGINS_TOML)
    db = str(tmp_path / "data" / "gw.db")
    assert main(["migrate", "--db", db], extra_plugins=()) == 0  # commands but init, serve and migrate need a database
    capsys.readouterr()

    def run(*argv, plugins=(ChannelTypesPlugin(),), stdin=None):
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        status = main([*argv, "--db", db], extra_plugins=plugins)
        out, err = capsys.readouterr()
        return status, out, err

    run.db = db
    return run


def connect(db):
    store = Store(db, CORE_MIGRATIONS)
    store.migrate()
    return store.connect()


def assert_one_line_error(status, out, err, *fragments):
    assert status != 0
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


# --- init ---------------------------------------------------------------------------------


def test_init_creates_admin_demo_channel_and_key(cli):
    status, out, err = cli("init", "--port", "9000")
    assert status == 0, err
    secret = next(line.strip() for line in out.splitlines() if line.strip().startswith("sk-"))
    assert "shown only now" in out
    assert "http://127.0.0.1:9000/v1" in out and "http://127.0.0.1:9000/console/" in out
    password = out.split("Console password (shown only now): ")[1].split()[0]
    conn = connect(cli.db)
    admin = users.get_user(conn, "admin")
    assert admin.is_admin and admin.groups == ("default",)
    assert verify_password(password, users.get_password_hash(conn, "admin"))
    demo = channels.get_channel(conn, "demo")
    assert (demo.type, demo.base_url, demo.models, demo.groups) == ("demo", "local://demo", ("demo-chat",), ("default",))
    assert prices.get_price(conn, "demo-chat").free
    key = keys.find_key(conn, hash_key(secret))
    assert (key.name, key.user_name, key.group) == ("demo", "admin", "default")

    status, again, _ = cli("init")
    assert status == 0
    assert "Already initialized" in again and "relaygate key create admin" in again
    assert "sk-" not in again and "password" not in again
    assert "http://127.0.0.1:8080/v1" in again
    assert len(users.list_users(conn)) == 1 and channels.count_channels(conn) == 1
    assert len(keys.list_keys(conn, admin.id)) == 1
    conn.close()


def test_init_json(cli):
    status, out, _ = cli("init", "--json")
    assert status == 0
    data = json.loads(out)
    assert data["gateway_url"] == "http://127.0.0.1:8080/v1"
    assert data["console_url"] == "http://127.0.0.1:8080/console/"
    assert data["key"].startswith("sk-") and data["admin_password"] and data["channel_created"] is True
    again = json.loads(cli("init", "--json")[1])
    assert again["key"] is None and again["admin_password"] is None and again["channel_created"] is False


def test_init_without_the_demo_type_fails_cleanly_and_creates_nothing(cli):
    status, out, err = cli("init", plugins=())
    assert_one_line_error(status, out, err, "channel type 'demo' is not available")
    conn = connect(cli.db)
    assert users.list_users(conn) == []
    conn.close()


# --- users and wallets -------------------------------------------------------------------------


def test_user_add(cli):
    status, out, _ = cli("user", "add", "alice", "--groups", "default,vip")
    assert status == 0 and "alice" in out
    status, out, _ = cli("user", "add", "root", "--admin", "--password-stdin", "--json", stdin="s3cret!\n")
    record = json.loads(out)
    assert record["name"] == "root" and record["is_admin"] is True and record["groups"] == ["default"]
    conn = connect(cli.db)
    assert verify_password("s3cret!", users.get_password_hash(conn, "root"))
    assert users.get_user(conn, "alice").groups == ("default", "vip")
    conn.close()
    assert_one_line_error(*cli("user", "add", "alice"), "user 'alice' already exists")
    assert_one_line_error(*cli("user", "add", "empty", "--password-stdin", stdin="\n"), "no password")


def test_wallet_topup(cli):
    cli("user", "add", "alice")
    status, out, _ = cli("wallet", "topup", "alice", "12.5", "--note", "welcome")
    assert status == 0 and "12.50" in out
    status, out, _ = cli("wallet", "topup", "alice", "0.000001", "--json")
    assert json.loads(out) == {"user": "alice", "user_id": 1, "amount_micros": 1, "balance_micros": 12_500_001}
    for bad in ("-5", "abc", "0", "1.0000001", "nan"):
        status, out, err = cli("wallet", "topup", "alice", bad)
        assert_one_line_error(status, out, err)
        assert status == 2
    status, out, err = cli("wallet", "topup", "nobody", "5")
    assert_one_line_error(status, out, err, "no user named 'nobody'")
    assert status == 1


# --- channels and prices ---------------------------------------------------------------------------


def test_channel_add_masks_and_normalizes(cli):
    status, out, _ = cli(
        "channel", "add", "main", "--type", "fakeai", "--base-url", "https://api.example.com/v1/",
        "--api-key", "sk-upstream-aaaaaaaa1111", "--api-key", "sk-upstream-bbbbbbbb2222,sk-upstream-cccccccc3333",
        "--models", "gpt-x,gpt-y", "--groups", "default,vip", "--priority", "5", "--weight", "3",
        "--model-map", "fast=gpt-x-mini", "--json",
    )  # fmt: skip
    assert status == 0
    record = json.loads(out)
    assert record["base_url"] == "https://api.example.com"
    assert record["api_keys"] == ["sk-u…1111", "sk-u…2222", "sk-u…3333"]
    assert "aaaaaaaa" not in out
    conn = connect(cli.db)
    stored = channels.get_channel(conn, "main")
    assert stored.api_keys == ("sk-upstream-aaaaaaaa1111", "sk-upstream-bbbbbbbb2222", "sk-upstream-cccccccc3333")
    assert (stored.models, stored.groups, stored.priority, stored.weight) == (("gpt-x", "gpt-y"), ("default", "vip"), 5, 3)
    assert stored.model_map == {"fast": "gpt-x-mini"}
    conn.close()
    for args in (("channel", "list"), ("channel", "list", "--json")):
        status, out, _ = cli(*args)
        assert status == 0 and "main" in out and "sk-u…1111" in out and "aaaaaaaa" not in out
    status, out, err = cli("channel", "add", "main", "--type", "fakeai", "--base-url", "https://x", "--models", "m")
    assert_one_line_error(status, out, err, "channel 'main' already exists")


def test_channel_add_unknown_type(cli):
    status, out, err = cli("channel", "add", "x", "--type", "nope", "--base-url", "https://x", "--models", "m")
    assert_one_line_error(status, out, err, "unknown channel type 'nope'", "demo, fakeai")
    assert status == 2


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--base-url", "nowhere", "--models", "m"), "--base-url"),
        (("--base-url", "https://x", "--models", ","), "--models"),
        (("--base-url", "https://x", "--models", "m", "--model-map", "broken"), "client=upstream"),
        (("--base-url", "https://x", "--models", "m", "--weight", "heavy"), "--weight must be a whole number from 0 to 1000000, got 'heavy'"),
    ],
)
def test_channel_add_rejects_bad_arguments(cli, args, fragment):
    assert_one_line_error(*cli("channel", "add", "x", "--type", "fakeai", *args), fragment)


def test_price_set(cli):
    status, out, _ = cli("price", "set", "gpt-x", "--input", "2.50", "--output", "10", "--cached-input", "1.25")
    assert status == 0 and "2.50" in out
    status, out, _ = cli("price", "set", "free-model", "--free", "--json")
    assert json.loads(out)["free"] is True
    conn = connect(cli.db)
    price = prices.get_price(conn, "gpt-x")
    assert (price.input_micros_per_mtok, price.output_micros_per_mtok, price.cached_input_micros_per_mtok) == (
        2_500_000, 10_000_000, 1_250_000,
    )  # fmt: skip
    conn.close()
    assert_one_line_error(*cli("price", "set", "gpt-y", "--input", "1"), "--input and --output are required")
    assert_one_line_error(*cli("price", "set", "gpt-y", "--input", "1", "--output", "-2"), "negative")
    status, out, _ = cli("price", "list", "--json")
    assert [p["model"] for p in json.loads(out)] == ["free-model", "gpt-x"]


# --- keys ----------------------------------------------------------------------------------------------


def test_key_create_json_is_exactly_id_and_key(cli):
    cli("user", "add", "alice", "--groups", "default,vip")
    assert cli("channel", "add", "both", "--type", "fakeai", "--base-url", "https://x", "--models", "m1,m2", "--groups", "vip")[0] == 0
    status, out, _ = cli(
        "key", "create", "alice", "--name", "ci", "--group", "vip", "--quota", "5.5", "--expires", "2099-01-01T00:00:00Z",
        "--models", "m1,m2", "--allow-ip", "10.0.0.0/8,192.168.1.7", "--json",
    )  # fmt: skip
    assert status == 0
    data = json.loads(out)
    assert set(data) == {"id", "key"} and data["key"].startswith("sk-")
    conn = connect(cli.db)
    key = keys.find_key(conn, hash_key(data["key"]))
    assert (key.id, key.name, key.group, key.quota_micros) == (data["id"], "ci", "vip", 5_500_000)
    assert key.models == ("m1", "m2") and key.allow_ips == ("10.0.0.0/8", "192.168.1.7/32")
    assert key.expires_at == 4070908800.0
    conn.close()


def test_key_create_prints_the_secret_once_and_lists_only_prefixes(cli):
    cli("user", "add", "alice")
    status, out, _ = cli("key", "create", "alice")
    secret = next(line.strip() for line in out.splitlines() if line.strip().startswith("sk-"))
    assert status == 0 and "shown only now" in out
    for args in (("key", "list", "alice"), ("key", "list", "alice", "--json")):
        status, listed, _ = cli(*args)
        assert status == 0 and secret not in listed and secret[:7] in listed
    rows = json.loads(cli("key", "list", "alice", "--json")[1])
    assert [row["name"] for row in rows] == ["default"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--allow-ip", "10.0.0.0/33"), "not an IP address or CIDR"),
        (("--expires", "2001-01-01"), "in the past"),
        (("--expires", "tomorrow"), "ISO 8601"),
        (("--quota", "-1"), "negative"),
        (("--group", "vip"), "group 'vip' is not open to user 'alice'"),
    ],
)
def test_key_create_rejects_bad_arguments(cli, args, fragment):
    cli("user", "add", "alice")
    status, out, err = cli("key", "create", "alice", *args)
    assert_one_line_error(status, out, err, fragment)
    assert status == 2


def test_key_disable_enable_delete(cli):
    cli("user", "add", "alice")
    key_id = json.loads(cli("key", "create", "alice", "--json")[1])["id"]
    status, out, _ = cli("key", "disable", str(key_id))
    assert status == 0 and "disabled" in out
    assert json.loads(cli("key", "enable", str(key_id), "--json")[1])["enabled"] is True
    status, out, _ = cli("key", "delete", str(key_id), "--json")
    assert json.loads(out)["deleted"] is True
    assert json.loads(cli("key", "list", "alice", "--json")[1]) == []
    status, out, err = cli("key", "enable", str(key_id))
    assert_one_line_error(status, out, err, f"no API key with id {key_id}")
    assert status == 1
    assert_one_line_error(*cli("key", "disable", "abc"), "invalid int value")


def test_missing_user(cli):
    status, out, err = cli("key", "create", "nobody")
    assert_one_line_error(status, out, err, "no user named 'nobody'")


# --- the command framework -----------------------------------------------------------------------------


@pytest.mark.usefixtures("bundled_adapters")  # relaygate init makes a demo channel
def test_plugins_lists_what_was_loaded(cli):
    status, out, _ = cli("plugins", "--json")
    rows = json.loads(out)
    core = [row for row in rows if row["name"].startswith("core.")]
    assert [row["name"] for row in core] == list(DEFAULT_PLUGINS)
    assert core[0] == {"name": "core.policies", "module": "gateway_core.policies.plugin", "distribution": "relaygate", "version": core[0]["version"]}
    infrastructure = installed_entry_points(INFRASTRUCTURE_GROUP)  # loaded whatever plugins.toml says
    assert len(rows) == len(core) + len(infrastructure) + 1 and set(rows[-1]) == {"name", "module", "distribution", "version"}
    status, out, _ = cli("plugins")
    assert status == 0 and out.splitlines()[0].split() == ["name", "module", "distribution", "version"]


def test_serve_with_uvicorn_not_installed_names_the_extra_in_one_line(cli, monkeypatch):
    import gateway_core.runtime

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if `relaygate[uvicorn]` were not installed
    monkeypatch.delitem(sys.modules, "gateway_core.runtime.server_uvicorn", raising=False)
    monkeypatch.delattr(gateway_core.runtime, "server_uvicorn", raising=False)
    status, out, err = cli("serve", "--server", "uvicorn", "--port", "0")
    assert_one_line_error(status, out, err, "--server uvicorn", "uvicorn is not installed", "pip install 'relaygate[uvicorn]'")


def test_plugins_can_add_nested_commands(cli):
    status, out, _ = cli("tools", "greet", "world", plugins=(GreetingPlugin(),))
    assert (status, out) == (0, "hello world\n")
    status, out, _ = cli("tools", "greet", "world", "--json", plugins=(GreetingPlugin(),))
    assert json.loads(out) == {"hello": "world", "db": cli.db}


def test_db_and_json_are_accepted_anywhere(cli, tmp_path):
    other = str(tmp_path / "other.db")
    assert main(["migrate", "--db", other], extra_plugins=()) == 0
    assert main(["--db", other, "--json", "user", "add", "alice"], extra_plugins=()) == 0
    assert main(["user", "add", "bob", "--db", other], extra_plugins=()) == 0
    conn = connect(other)
    assert [u.name for u in users.list_users(conn)] == ["alice", "bob"]
    conn.close()


def test_db_from_the_environment(cli, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RELAYGATE_DB", str(tmp_path / "env.db"))
    assert main(["migrate"]) == 0
    assert main(["user", "add", "carol"]) == 0
    assert (tmp_path / "env.db").exists()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (("key", "create"), "the following arguments are required: USER"),
        (("nonsense",), "invalid choice"),
        (("user", "add", "x", "--bogus"), "unrecognized arguments: --bogus"),
    ],
)
def test_usage_errors_are_one_line(cli, argv, fragment):
    status, out, err = cli(*argv)
    assert_one_line_error(status, out, err, fragment)
    assert status == 2


def test_a_missing_plugins_file_is_one_line(cli):
    status, out, err = cli("plugins", "--plugins", "missing.toml")
    assert_one_line_error(status, out, err, "plugins file not found")


def test_a_group_without_its_command_shows_its_help(cli):
    status, out, _ = cli("key")
    assert status == 2 and "create" in out and "disable" in out


# --- the console script ------------------------------------------------------------------------------


def _script(tmp_path, *argv, toml=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYGATE_")}
    env["RELAYGATE_HOME"] = str(tmp_path / "home")
    if toml is not None:
        (tmp_path / "plugins.toml").write_text(toml)
    return subprocess.run(
        [str(RELAYGATE), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )


def test_console_script_help(tmp_path):
    done = _script(tmp_path, "--help")
    assert done.returncode == 0
    assert "init" in done.stdout and "key" in done.stdout and "serve" in done.stdout


def test_console_script_error_is_one_line(tmp_path):
    assert _script(tmp_path, "migrate", toml=PLUGINS_TOML).returncode == 0
    done = _script(tmp_path, "key", "create", "nobody", toml=PLUGINS_TOML)
    assert done.returncode == 1
    assert done.stderr == "relaygate key create: no user named 'nobody'\n"


@pytest.mark.usefixtures("bundled_adapters")  # relaygate init makes a demo channel
def test_console_script_init_with_the_installed_plugins(tmp_path):
    """Succeeds with the installed demo adapter; without one, fails in one line."""
    try:
        demo_installed = "demo" in collect(Config(db_path=str(tmp_path / "probe.db"))).channel_types
    except ConfigError:
        demo_installed = False
    done = _script(tmp_path, "init")
    if demo_installed:
        assert done.returncode == 0, done.stderr
        assert "sk-" in done.stdout and "http://127.0.0.1:8080/v1" in done.stdout
        assert (tmp_path / "home" / "relaygate.db").exists()  # in RELAYGATE_HOME, not the current folder
        again = _script(tmp_path, "init")
        assert again.returncode == 0 and "Already initialized" in again.stdout
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        listed = subprocess.run([str(RELAYGATE), "key", "list", "admin"], cwd=elsewhere, capture_output=True, text=True, timeout=60,
                                env={**{k: v for k, v in os.environ.items() if not k.startswith("RELAYGATE_")}, "RELAYGATE_HOME": str(tmp_path / "home")})  # fmt: skip
        assert listed.returncode == 0 and "demo" in listed.stdout, listed.stderr  # the same database from any folder
    else:
        assert done.returncode != 0
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    missing = _script(tmp_path, "key", "list", "admin", "--db", str(tmp_path / "typo.db"))
    assert missing.returncode == 1 and missing.stderr == (
        f"relaygate key list: no database at {tmp_path / 'typo.db'}: create one with 'relaygate init', "
        "or point --db, RELAYGATE_DB or RELAYGATE_HOME at yours\n"
    )
    assert not (tmp_path / "typo.db").exists()


def test_version_names_the_core_and_each_plugins_distribution(tmp_path):
    from importlib import metadata

    done = _script(tmp_path, "--version")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"relaygate {metadata.version('relaygate')}"
    if "demo" in collect(Config(db_path=str(tmp_path / "probe.db"))).channel_types:
        assert f"relaygate-demo {metadata.version('relaygate-demo')} (plugins: demo)" in lines
    assert not (tmp_path / "home").exists()  # nothing created to print it


def test_a_token_made_without_an_expiry_lapses_in_ninety_days_and_is_named(cli):
    assert cli("user", "add", "root", "--admin")[0] == 0
    status, out, err = cli("token", "create", "root", "--scope", "admin")
    assert status == 0, err
    today = time.strftime("%Y-%m-%d", time.gmtime())
    lapses = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 90 * 86_400))
    assert f"('cli {today}', scope admin, expires {lapses})" in out
    status, out, _ = cli("token", "create", "root", "--expires", "never", "--name", "forever", "--json")
    assert status == 0
    status, out, _ = cli("token", "list", "--json")
    listed = {token["name"]: token for token in json.loads(out)}
    assert listed["forever"]["expires_at"] is None
    assert abs(listed[f"cli {today}"]["expires_at"] - (time.time() + 90 * 86_400)) < 120




@pytest.mark.usefixtures("bundled_adapters")  # relaygate init makes a demo channel
def test_tables_say_usd_in_the_heading_and_drop_kinds_of_price_no_model_has(tmp_path, capsys):
    from gateway_core.commands.cli import main

    db = str(tmp_path / "t.db")
    assert main(["init", "--db", db]) == 0
    capsys.readouterr()
    assert main(["key", "list", "admin", "--db", db]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert "quota_usd" in header.split() and "used_usd" in header.split() and "_micros" not in header and "USD" not in row
    assert main(["price", "list", "--db", db]) == 0
    assert capsys.readouterr().out.splitlines()[0].split() == ["model", "input_usd_per_mtok", "output_usd_per_mtok", "free", "source", "updated_at"]  # where each price comes from (billing.md#the-catalogue)
