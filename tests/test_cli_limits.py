"""``relaygate group set|list``, ``user limits``, ``key limits`` and ``key create --rpm/--tpm/--concurrency``,
and how the stored limits reach the key record the request path reads."""

import json

import pytest

from gateway_core.commands.cli import main
from gateway_core.records import NO_LIMITS, RateLimits
from gateway_core.secrets import hash_key
from gateway_core.store import CORE_MIGRATIONS, Store, keys, limits, users

NO_BUDGETS = {"daily_budget_micros": None, "weekly_budget_micros": None, "monthly_budget_micros": None}


def command_line(tmp_path, monkeypatch, capsys, db):
    """``cli(*argv)`` → (status, stdout, stderr), on the database ``db``, core plugin only."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELAYGATE_DB", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    (tmp_path / "plugins.toml").write_text("load = []\n")
    assert main(["migrate", "--db", db]) == 0  # commands but init, serve and migrate need a database
    capsys.readouterr()

    def run(*argv):
        status = main([*argv, "--db", db])
        out, err = capsys.readouterr()
        return status, out, err

    run.db = db
    return run


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys, db_url):
    """The command line on a fresh database of either store."""
    return command_line(tmp_path, monkeypatch, capsys, db_url)


@pytest.fixture
def sqlite_cli(tmp_path, monkeypatch, capsys):
    """The command line on a fresh SQLite file (for tests that read it with the store's functions)."""
    return command_line(tmp_path, monkeypatch, capsys, str(tmp_path / "gw.db"))


def connect(db):
    store = Store(db, CORE_MIGRATIONS)
    store.migrate()
    return store.connect()


def test_group_set_creates_and_changes_only_what_is_given(cli):
    status, out, _ = cli("group", "set", "vip", "--ratio", "0.8", "--rpm", "120", "--concurrency", "4")
    assert status == 0 and out.strip() == "Group 'vip': ratio 0.8, rpm 120, tpm unlimited, concurrency 4."
    status, out, _ = cli("group", "set", "vip", "--tpm", "50000", "--json")
    assert json.loads(out) == {"name": "vip", "ratio": "0.8", "ratio_ppm": 800_000, "rpm": 120, "tpm": 50000, "concurrency": 4}
    status, out, _ = cli("group", "list", "--json")
    assert [g["name"] for g in json.loads(out)] == ["default", "vip"]
    status, out, _ = cli("group", "list")
    assert out.splitlines()[0].split() == ["name", "ratio", "rpm", "tpm", "concurrency"]


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (("group", "set", "g", "--ratio", "abc"), "--ratio must be a decimal"),
        (("group", "set", "g", "--ratio", "-1"), "--ratio must be a number >= 0"),
        (("group", "set", "g", "--rpm", "-1"), "--rpm must be a whole number from 0 (unlimited) to 2147483648, got -1"),  # the admin layer's words
        (("group", "set", "g", "--tpm", "1.5"), "--tpm must be a whole number from 0 (unlimited) to 2147483648, got '1.5'"),
        (("group", "set", "a,b"), "is not a group name"),
        (("user", "limits", "nobody"), "no user named 'nobody'"),
        (("key", "limits", "99", "--rpm", "1"), "no API key with id 99"),
        (("key", "create", "nobody", "--rpm", "x"), "--rpm must be a whole number from 0 (unlimited) to 2147483648, got 'x'"),
    ],
)
def test_bad_arguments_are_one_line_errors(cli, argv, fragment):
    status, out, err = cli(*argv)
    assert status != 0 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert fragment in err


def test_user_limits_override_and_default(cli):
    cli("user", "add", "alice")
    status, out, _ = cli("user", "limits", "alice")
    assert out.strip() == "User 'alice': rpm default, tpm default, concurrency default (default: the defaults of the key's group)."
    status, out, _ = cli("user", "limits", "alice", "--rpm", "0", "--tpm", "1000", "--json")
    assert json.loads(out) == {"user": "alice", "user_id": 1, "rpm": 0, "tpm": 1000, "concurrency": None, **NO_BUDGETS}
    status, out, _ = cli("user", "limits", "alice", "--tpm", "default", "--json")
    assert json.loads(out)["tpm"] is None


def test_key_create_and_key_limits(cli):
    cli("user", "add", "alice")
    status, out, _ = cli("key", "create", "alice", "--rpm", "60", "--concurrency", "2", "--json")
    key_id = json.loads(out)["id"]
    status, out, _ = cli("key", "limits", str(key_id))
    assert out.strip().endswith("rpm 60, tpm unlimited, concurrency 2.")
    status, out, _ = cli("key", "limits", str(key_id), "--rpm", "0", "--tpm", "9000", "--json")
    assert json.loads(out) == {"id": key_id, "name": "default", "rpm": 0, "tpm": 9000, "concurrency": 2, **NO_BUDGETS}
    status, out, _ = cli("key", "list", "alice", "--json")
    assert json.loads(out)[0]["limits"] == {"requests_per_minute": 0, "tokens_per_minute": 9000, "concurrency": 2}


def test_the_key_record_folds_in_user_overrides_and_group_defaults(sqlite_cli):
    cli = sqlite_cli
    cli("user", "add", "alice", "--groups", "default,vip")
    cli("group", "set", "vip", "--rpm", "30", "--tpm", "1000")
    conn = connect(cli.db)
    alice = users.get_user(conn, "alice").id
    _, plain = keys.create_key(conn, alice, name="plain", group="default")
    _, vip = keys.create_key(conn, alice, name="vip", group="vip", limits={"concurrency": 1})
    record = keys.find_key(conn, hash_key(plain))
    assert record.limits is NO_LIMITS and record.user_limits is NO_LIMITS  # the hot path's cheap case
    record = keys.find_key(conn, hash_key(vip))
    assert record.limits == RateLimits(concurrency=1)
    assert record.user_limits == RateLimits(requests_per_minute=30, tokens_per_minute=1000)  # the group's defaults
    limits.set_user_limits(conn, alice, {"rpm": 0, "concurrency": 3})  # 0: unlimited, overriding the group
    assert keys.find_key(conn, hash_key(vip)).user_limits == RateLimits(tokens_per_minute=1000, concurrency=3)
    assert keys.find_key(conn, hash_key(plain)).user_limits == RateLimits(concurrency=3)
    with pytest.raises(ValueError, match="whole number"):
        keys.create_key(conn, alice, name="bad", group="default", limits={"rpm": -5})
    with pytest.raises(ValueError, match="unknown limit"):
        limits.set_user_limits(conn, alice, {"rph": 5})
    conn.close()
