"""The admin layer's channel settings, headers and timeouts on a real store: settings
validated against the channel type's schema and stored typed, checked again when
the type changes, and left untouched on a channel whose type is not loaded."""

from __future__ import annotations

import pytest

from gateway_core.admin import Admin, Invalid
from gateway_core.admin import channels
from gateway_core.config import Config
from gateway_core.runtime.plugins import collect
from gateway_core.testing.stores import admin_ports

pytestmark = pytest.mark.usefixtures("bundled_adapters")  # the settings the demo, openai and gemini channel types declare

DEMO = {"name": "demo", "type": "demo", "base_url": "local://demo", "models": ["demo-chat"]}


@pytest.fixture
async def admin(db_url, start_store):
    """The admin layer on either store."""
    registry = collect(Config(db_path=db_url, load=("demo", "openai", "gemini")))
    store = await start_store(registry.migrations)
    return Admin(admin_ports(store)[0], registry.channel_types)


async def test_settings_are_validated_and_stored_typed(admin):
    channel = await channels.add_channel(admin, {**DEMO, "settings": {"delay_ms": "250"}})
    assert channel.settings == {"delay_ms": 250}
    assert (await channels.get_channel(admin, channel.id)).settings == {"delay_ms": 250}
    with pytest.raises(Invalid, match=r"^setting 'delay_ms' must be a whole number from 0 to 60000, got 'soon'$"):
        await channels.add_channel(admin, {**DEMO, "name": "other", "settings": {"delay_ms": "soon"}})
    with pytest.raises(Invalid, match=r"^unknown setting 'delay' \(known: delay_ms, forward_traceparent\)$"):
        await channels.update_channel(admin, channel.id, {"settings": {"delay": "5"}})
    assert [c.name for c in await channels.list_channels(admin)] == ["demo"]
    assert (await channels.get_channel(admin, channel.id)).settings == {"delay_ms": 250}


async def test_every_channel_accepts_the_core_settings(admin):
    channel = await channels.add_channel(admin, {**DEMO, "settings": {"forward_traceparent": "yes"}})
    assert channel.settings == {"forward_traceparent": True}
    with pytest.raises(Invalid, match=r"^setting 'forward_traceparent' must be true or false"):
        await channels.update_channel(admin, channel.id, {"settings": {"forward_traceparent": "maybe"}})


async def test_an_edit_sets_and_unsets_settings(admin):
    channel = await channels.add_channel(admin, {**DEMO, "type": "gemini", "base_url": "https://g.example.com/v1beta",
                                                 "settings": {"api_version": "v1"}})  # fmt: skip
    assert channel.base_url == "https://g.example.com"
    changed = channels.changed_settings(channel.settings, {"thought_signature_placeholder": ""}, ["api_version"])
    channel = await channels.update_channel(admin, channel.id, {"settings": changed})
    assert channel.settings == {"thought_signature_placeholder": ""}
    with pytest.raises(Invalid, match=r"cannot unset 'api_version': not set \(the channel sets: thought_signature_placeholder\)"):
        channels.changed_settings(channel.settings, {}, ["api_version"])
    assert (await channels.update_channel(admin, channel.id, {"settings": {}})).settings == {}


async def test_a_change_of_type_checks_the_stored_settings_again(admin):
    channel = await channels.add_channel(admin, {**DEMO, "settings": {"delay_ms": 5}})
    with pytest.raises(Invalid, match=r"stored settings do not suit the channel type 'openai': unknown setting 'delay_ms' \(known: responses, max_tokens_param, forward_traceparent\)"):
        await channels.update_channel(admin, channel.id, {"type": "openai", "base_url": "https://api.example.com"})
    assert (await channels.get_channel(admin, channel.id)).type == "demo"
    changed = await channels.update_channel(
        admin, channel.id, {"type": "openai", "base_url": "https://api.example.com", "settings": {"responses": "yes"}}
    )
    assert (changed.type, changed.settings) == ("openai", {"responses": True})


async def test_a_channel_whose_type_is_not_loaded_keeps_its_settings(admin):
    ghost = await admin.store.add_channel({**DEMO, "name": "ghost", "type": "ollama", "api_keys": [], "groups": ["default"],
                                           "settings": {"keep_alive": "10m", "anything": 1}})  # fmt: skip
    edited = await channels.update_channel(admin, ghost.id, {"type": "ollama", "priority": 3, "headers": {"X-Team": "blue"}})
    assert (edited.type, edited.priority, edited.settings) == ("ollama", 3, {"keep_alive": "10m", "anything": 1})
    with pytest.raises(Invalid, match=r"the channel's settings cannot be checked: its type 'ollama' is not loaded"):
        await channels.update_channel(admin, ghost.id, {"settings": {"keep_alive": "5m"}})
    assert (await channels.get_channel(admin, ghost.id)).settings == {"keep_alive": "10m", "anything": 1}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"headers": {"X Team": "blue"}}, "header has a name that is not a valid HTTP header name: 'X Team'"),
        ({"headers": {"X-Team": "blue\r\nX-Evil: 1"}}, "header 'X-Team' must be one line of text"),
        ({"headers": {"X-Team": "a", "x-team": "b"}}, "header names 'x-team' twice"),
        ({"timeout_idle": 0}, "timeout idle must be more than 0 seconds"),
        ({"timeout_connect": -1.5}, "timeout connect must be more than 0 seconds"),
        ({"concurrency": -1}, "concurrency must be a whole number from 0 (no cap) to 1000000, got -1"),  # the rule every front shows
    ],
)
async def test_headers_and_timeouts_are_checked(admin, changes, message):
    channel = await channels.add_channel(admin, DEMO)
    with pytest.raises(Invalid) as refused:
        await channels.update_channel(admin, channel.id, changes)
    assert str(refused.value) == message


async def test_good_headers_and_timeouts_are_stored(admin):
    channel = await channels.add_channel(admin, {**DEMO, "headers": {" X-Team ": " blue "}, "timeout_first_byte": 2.5, "concurrency": 3})
    assert (channel.headers, channel.timeout_first_byte, channel.concurrency) == ({"X-Team": "blue"}, 2.5, 3)
    channel = await channels.update_channel(admin, channel.id, {"timeout_first_byte": None, "headers": {}})
    assert (channel.headers, channel.timeout_first_byte) == ({}, None)
