"""Every [gateway] setting from the environment (RELAYGATE_<NAME>), over
plugins.toml and under a flag, and ``relaygate config show`` saying where each
setting came from with secrets masked."""

from __future__ import annotations

import contextlib
import io
import json

import attrs
import pytest

from gateway_core import hookimpl
from gateway_core.commands.cli import main
from gateway_core.config import GATEWAY_SETTINGS, Config, ConfigError, load_config
from gateway_core.base.config_env import variable

# a value for each setting's variable, and what the configuration then holds
SAMPLES = {
    "trusted_proxies": ("10.0.0.1, 10.0.0.2", ("10.0.0.1", "10.0.0.2")), "max_body_bytes": ("1024", 1024),
    "max_attempts": ("5", 5), "default_max_output_tokens": ("100", 100), "stale_hold_seconds": ("60", 60.0),
    "attempt_deadline": ("10", 10.0), "keepalive_interval": ("2.5", 2.5), "breaker_failures": ("7", 7), "breaker_cooldown": ("3", 3.0),
    "breaker_last_resort": ("0", 0.0), "db_pool_size": ("3", 3), "session_affinity": ("true", True), "session_header": ("X-Conv", "x-conv"),
    "session_ttl": ("30", 30.0), "session_max_entries": ("50", 50), "db_timeout": ("2", 2.0), "redis": ("redis://127.0.0.1:6390/2", "redis://127.0.0.1:6390/2"),
    "redis_fail_open": ("yes", True), "redis_prefix": ("rg-test", "rg-test"), "metrics_token": ("s3cret", "s3cret"),
    "metrics_allow": ("10.0.0.0/8", ("10.0.0.0/8",)), "shutdown_drain_seconds": ("4", 4.0), "hold_lease_seconds": ("90", 90.0),
    "replica": ("gw-7", "gw-7"), "shutdown_grace_seconds": ("12", 12.0), "server": ("uvicorn", "uvicorn"), "pin_workers": ("on", True),
    "budget_timezone": ("Europe/Paris", "Europe/Paris"), "budget_window": ("rolling", "rolling"), "cost_header": ("1", True),
    "body_timeout": ("30", 30.0), "max_answer_bytes": ("2048", 2048), "max_frame_bytes": ("4096", 4096), "write_timeout": ("0", 0.0),
    "websocket_idle_timeout": ("45", 45.0),
    "locked_retry_seconds": ("2.5", 2.5),
}  # fmt: skip
TABLES = {"timeouts": ("connect", "3", 3.0), "json": ("max_depth", "12", 12), "redis_faults": ("rate_limits", "open", "open")}


def config_of(environ: dict[str, str], tmp_path, toml: str = "") -> Config:
    plugins = tmp_path / "plugins.toml"
    plugins.write_text(toml)
    return load_config(str(tmp_path / "gw.db"), plugins, environ=environ)


def test_every_gateway_setting_has_its_variable(tmp_path):
    scalars = [name for name in GATEWAY_SETTINGS if name not in TABLES]
    missing = [name for name in scalars if name not in SAMPLES and not isinstance(getattr(Config(db_path=""), name), bool)]
    assert not missing, f"add a sample for {missing}"
    for name in scalars:
        text, expected = SAMPLES.get(name, ("true", True))
        config = config_of({variable(name): text}, tmp_path)
        assert getattr(config, name) == expected, name
        assert config.sources[name] == variable(name)
    for name, (key, text, expected) in TABLES.items():
        config = config_of({variable(name, key): text}, tmp_path)
        table = getattr(config, {"json": "json_limits"}.get(name, name))
        assert getattr(table, key) == expected, name
        assert config.sources[name] == variable(name, key)


def test_the_environment_is_over_the_file_and_a_table_keeps_the_files_other_keys(tmp_path):
    toml = "[gateway]\nmax_attempts = 2\nbreaker_failures = 9\n[gateway.timeouts]\nconnect = 4\nidle = 30\n"
    config = config_of({"RELAYGATE_MAX_ATTEMPTS": "6", "RELAYGATE_TIMEOUTS_CONNECT": "1.5"}, tmp_path, toml)
    assert (config.max_attempts, config.breaker_failures) == (6, 9)
    assert (config.timeouts.connect, config.timeouts.idle) == (1.5, 30.0)
    assert config.sources["max_attempts"] == "RELAYGATE_MAX_ATTEMPTS"
    assert config.sources["breaker_failures"] == str(tmp_path / "plugins.toml")
    assert config.sources["timeouts"] == f"RELAYGATE_TIMEOUTS_CONNECT over {tmp_path / 'plugins.toml'}"
    assert "max_body_bytes" not in config.sources  # the default


@pytest.mark.parametrize(("name", "text", "words"), [
    ("RELAYGATE_MAX_ATTEMPTS", "many", "RELAYGATE_MAX_ATTEMPTS must be a whole number, got 'many'"),
    ("RELAYGATE_COST_HEADER", "maybe", "RELAYGATE_COST_HEADER must be true or false, got 'maybe'"),
    ("RELAYGATE_REDIS", "localhost:6379", "RELAYGATE_REDIS must be a Redis URL"),
    ("RELAYGATE_MAX_ATTEMPTS", "0", "max_attempts must be a positive integer, got 0"),
])  # fmt: skip
def test_a_bad_value_is_one_line_naming_it(tmp_path, monkeypatch, name, text, words):
    with pytest.raises(ConfigError, match=words):
        config_of({name: text}, tmp_path)
    monkeypatch.setenv(name, text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["config", "show", "--db", str(tmp_path / "gw.db")]) == 2
    assert err.getvalue().count("\n") == 1 and words.split(" got")[0] in err.getvalue()


def test_config_show_says_where_each_setting_came_from_and_masks_secrets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text('[gateway]\nmax_attempts = 2\nmetrics_token = "file-token-1"\n')
    monkeypatch.setenv("RELAYGATE_PORT", "9099")
    monkeypatch.setenv("RELAYGATE_REDIS", "redis://ops:hunter22@127.0.0.1:6379/0")
    monkeypatch.delenv("RELAYGATE_DB", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["config", "show", "--json"]) == 0
    shown = json.loads(out.getvalue())
    assert shown["max_attempts"] == {"value": 2, "from": "plugins.toml"}
    assert shown["serve --port"] == {"value": "9099", "from": "RELAYGATE_PORT"}
    assert shown["redis"] == {"value": "redis://ops:********@127.0.0.1:6379/0", "from": "RELAYGATE_REDIS"}
    assert shown["metrics_token"]["value"] == "********" and "file-token-1" not in out.getvalue() and "hunter22" not in out.getvalue()
    assert shown["db"]["from"].startswith("default") and shown["db"]["value"].endswith("relaygate.db")
    assert shown["max_body_bytes"] == {"value": 33554432, "from": "default"}
    assert set(GATEWAY_SETTINGS) <= set(shown)


@pytest.mark.parametrize(("toml", "hidden"), [
    ("", False), ("[gateway]\nhide_forbidden_models = true\n", True),
    ("[gateway]\ndetailed_model_errors = false\n", True),  # an older file that asked for the indistinguishable answer keeps it
    ("[gateway]\ndetailed_model_errors = true\n", False),
    ("[gateway]\ndetailed_model_errors = false\nhide_forbidden_models = false\n", False),  # the new name wins
])  # fmt: skip
def test_hide_forbidden_models_and_the_older_name(tmp_path, toml, hidden):
    assert config_of({}, tmp_path, toml).hide_forbidden_models is hidden


# each [retention] key: a value for its variable, and what the configuration then holds
RETENTION_SAMPLES = {"usage_days": ("30", 30), "batch_rows": ("250", 250), "batch_pause_seconds": ("0.5", 0.5), "interval_seconds": ("5", 5.0)}


def test_every_retention_setting_has_its_variable_over_the_file(tmp_path):
    assert set(RETENTION_SAMPLES) == {field.name for field in attrs.fields(type(Config(db_path="").retention))}, "add a sample"
    toml = "[retention]\nusage_days = 90\nbatch_rows = 100\n"
    for key, (text, expected) in RETENTION_SAMPLES.items():
        name = f"RELAYGATE_RETENTION_{key.upper()}"
        config = config_of({name: text}, tmp_path, toml)
        assert getattr(config.retention, key) == expected, key
        assert config.sources[f"retention.{key}"] == name
    config = config_of({"RELAYGATE_RETENTION_BATCH_ROWS": "250"}, tmp_path, toml)
    assert (config.retention.usage_days, config.retention.batch_rows, config.retention.interval_seconds) == (90, 250, 60.0)
    assert config.sources["retention.usage_days"] == str(tmp_path / "plugins.toml")
    assert "retention.interval_seconds" not in config.sources  # the default


@pytest.mark.parametrize(("text", "words"), [
    ("many", "RELAYGATE_RETENTION_USAGE_DAYS must be a whole number, got 'many'"),
    ("-1", "RELAYGATE_RETENTION_USAGE_DAYS: [retention] usage_days must be a whole number, 0 or more, got -1"),
])  # fmt: skip
def test_a_bad_retention_value_names_its_variable(tmp_path, text, words):
    with pytest.raises(ConfigError) as raised:
        config_of({"RELAYGATE_RETENTION_USAGE_DAYS": text}, tmp_path, "[retention]\nusage_days = 7\n")
    assert str(raised.value) == words


def test_retention_in_config_show_and_the_flag_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text("load = []\n[retention]\nusage_days = 90\n")
    monkeypatch.setenv("RELAYGATE_RETENTION_USAGE_DAYS", "30")
    monkeypatch.setenv("RELAYGATE_RETENTION_BATCH_ROWS", "250")
    db = str(tmp_path / "gw.db")
    assert main(["migrate", "--db", db]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["config", "show", "--json", "--db", db]) == 0
    shown = json.loads(out.getvalue())
    assert shown["retention.usage_days"] == {"value": 30, "from": "RELAYGATE_RETENTION_USAGE_DAYS"}
    assert shown["retention.batch_rows"] == {"value": 250, "from": "RELAYGATE_RETENTION_BATCH_ROWS"}
    assert shown["retention.interval_seconds"] == {"value": 60.0, "from": "default"}
    for argv, days in ((["logs", "prune", "--dry-run"], 30), (["logs", "prune", "--dry-run", "--days", "3"], 3)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*argv, "--json", "--db", db]) == 0
        assert json.loads(out.getvalue())["usage_days"] == days


class AcmeSettings:
    """A plugin declaring its table's keys, as the console does for [plugins.console]."""

    @hookimpl
    def register_settings(self, register):
        register("acme", "endpoint", default="https://api.example")
        register("acme", "retries", default=3, variable="ACME_RETRIES")
        register("acme", "colour")  # no default: unset
        register("acme.oauth", "client_secret", variable="ACME_CLIENT_SECRET", secret=True)
        register("acme.oauth", "scopes", default=["read"])


def test_config_show_prints_the_plugins_tables_with_sources_and_secrets_masked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plugins.toml").write_text(
        'load = []\n[plugins.acme]\nretries = 5\nendpoint = "https://eu.api.example"\nupstream = "https://bot:pw-in-url@up.example/v1"\n'
        'api_token = "file-token-3"\n[plugins.acme.oauth]\nclient_secret = "file-secret-1"\n[plugins.other]\nmode = "fast"\n'
    )  # fmt: skip
    monkeypatch.setenv("ACME_RETRIES", "7")
    monkeypatch.delenv("ACME_CLIENT_SECRET", raising=False)
    monkeypatch.delenv("RELAYGATE_PLUGINS", raising=False)

    def show() -> tuple[dict, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["config", "show", "--json", "--db", str(tmp_path / "gw.db")], extra_plugins=[AcmeSettings()]) == 0
        return json.loads(out.getvalue()), out.getvalue()

    shown, text = show()
    assert shown["plugins.acme.endpoint"] == {"value": "https://eu.api.example", "from": "plugins.toml"}
    assert shown["plugins.acme.retries"] == {"value": "7", "from": "ACME_RETRIES"}  # the variable over the file
    assert shown["plugins.acme.colour"] == {"value": None, "from": "default"}
    assert shown["plugins.acme.oauth.scopes"] == {"value": ["read"], "from": "default"}
    assert shown["plugins.acme.oauth.client_secret"] == {"value": "********", "from": "plugins.toml"}
    # keys nobody declared, as the file has them: a secret by its name, a URL's password
    assert shown["plugins.acme.api_token"] == {"value": "********", "from": "plugins.toml"}
    assert shown["plugins.acme.upstream"] == {"value": "https://bot:********@up.example/v1", "from": "plugins.toml"}
    assert shown["plugins.other.mode"] == {"value": "fast", "from": "plugins.toml"}
    assert "file-secret-1" not in text and "file-token-3" not in text and "pw-in-url" not in text

    monkeypatch.setenv("ACME_CLIENT_SECRET", "env-secret-2")
    shown, text = show()
    assert shown["plugins.acme.oauth.client_secret"] == {"value": "********", "from": "ACME_CLIENT_SECRET"}
    assert "env-secret-2" not in text

    out = io.StringIO()  # the table for people says the same
    with contextlib.redirect_stdout(out):
        assert main(["config", "show", "--db", str(tmp_path / "gw.db")], extra_plugins=[AcmeSettings()]) == 0
    row = next(line for line in out.getvalue().splitlines() if line.startswith("plugins.acme.retries "))
    assert row.split() == ["plugins.acme.retries", "7", "ACME_RETRIES"]
    assert "env-secret-2" not in out.getvalue() and "file-token-3" not in out.getvalue()
