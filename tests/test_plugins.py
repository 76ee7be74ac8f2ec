"""Plugin discovery: adapters installed as distributions are found by their entry points."""

import pytest

from gateway_core import hookimpl
from gateway_core.config import Config, ConfigError, config_from_mapping
from gateway_core.runtime.plugins import DEFAULT_PLUGINS, collect, installed_entry_points


@pytest.mark.usefixtures("bundled_adapters")  # the adapters, found installed
def test_installed_adapters_are_found_by_entry_point():
    names = {ep.name for ep in installed_entry_points()}
    assert {"openai", "demo"} <= names
    registry = collect(Config())
    assert {"openai", "demo"} <= set(registry.channel_types)
    loaded = {p.name: p for p in registry.plugins}
    assert loaded["openai"].distribution == "relaygate-openai" and loaded["openai"].version


@pytest.mark.usefixtures("bundled_adapters")  # the adapters, found installed
def test_plugins_toml_can_leave_an_installed_plugin_out():
    registry = collect(config_from_mapping({"load": ["openai"]}))
    assert "demo" not in registry.channel_types
    assert "openai" in registry.channel_types
    # infrastructure plugins load whenever installed: `load` chooses among the others
    assert [p.name for p in registry.plugins] == [*DEFAULT_PLUGINS, "api", "metrics", "postgres", "redis", "tracing", "openai"]
    assert registry.store_kind("postgresql://db.internal/relaygate").name == "postgresql"
    assert registry.shared_state_kind(config_from_mapping({"gateway": {"redis": "redis://127.0.0.1:6379/0"}})).name == "redis"


@pytest.mark.usefixtures("bundled_adapters")  # the installed ones are listed
def test_unknown_plugin_name_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown plugin.*'opnai'.*installed: .*openai"):
        collect(config_from_mapping({"load": ["opnai"]}, source="plugins.toml"))


def test_misspelled_hook_is_caught():
    class Broken:
        @hookimpl
        def register_chanel_types(self, register):
            pass

    with pytest.raises(ConfigError, match="register_chanel_types"):
        collect(Config(), extra_plugins=[Broken()])


def test_unknown_gateway_setting_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown \\[gateway\\] setting"):
        config_from_mapping({"gateway": {"trusted_proxy": ["127.0.0.1"]}})
