"""The parts of the channel form drawn from data: a fieldset of settings per
loaded channel type (from its schema, ``ChannelType.settings``), and the
channel's headers as ``Name: value`` lines with stored values masked.

Fields are read as text and handed to the admin layer, which validates them
(:mod:`gateway_core.admin.channels`); nothing here decides what is valid.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from gateway_core import ChannelType, Setting
from gateway_core.channel_settings import SettingError, setting_text
from gateway_core.records import ChannelRecord, mask_secret
from starlette.datastructures import FormData

from .forms import FormError
from .i18n import _

MAX_HEADERS_TEXT = 20_000


def setting_key(type_name: str, setting: Setting) -> str:
    """The form field of a setting: each type's fieldset has its own names."""
    return f"setting.{type_name}.{setting.name}"


def is_checkbox(setting: Setting) -> bool:
    """A bool with a default is a checkbox; without one it has three states
    (not set, true, false) and is a select, like a choice."""
    return setting.kind == "bool" and setting.default is not None


@attrs.frozen
class SettingField:
    """One setting as the form shows it: its field name, its text, whether its checkbox is on."""

    key: str
    setting: Setting
    text: str
    checked: bool


@attrs.frozen
class SettingGroup:
    """The settings fieldset of one channel type; ``ignored`` are the stored settings
    of the channel its type does not declare (an edit without them removes them)."""

    type: str
    fields: tuple[SettingField, ...]
    ignored: tuple[str, ...] = ()


def setting_groups(
    channel_types: Mapping[str, ChannelType], channel: ChannelRecord | None, posted: Mapping[str, str] | None
) -> list[SettingGroup]:
    """A fieldset per loaded type that has settings, filled with the posted form
    (the form again after an error) or else the channel's stored settings."""
    groups = []
    for name, channel_type in sorted(channel_types.items()):
        if not channel_type.settings:
            continue
        stored = channel.settings if channel is not None and channel.type == name else {}
        fields = tuple(_field(name, setting, stored, posted) for setting in channel_type.settings)
        declared = {setting.name for setting in channel_type.settings}
        groups.append(SettingGroup(name, fields, tuple(sorted(set(stored) - declared))))
    return groups


def _field(type_name: str, setting: Setting, stored: Mapping[str, object], posted: Mapping[str, str] | None) -> SettingField:
    key = setting_key(type_name, setting)
    if posted is not None:
        return SettingField(key, setting, posted.get(key, ""), posted.get(key) == "on")
    if setting.name not in stored:
        return SettingField(key, setting, "", bool(setting.default))
    value = stored[setting.name]
    try:
        value = setting.convert(value)
    except SettingError:
        pass  # shown as stored: saving it says what is wrong
    return SettingField(key, setting, setting_text(value), bool(setting.read(stored)))


def settings_from_form(form: FormData, channel_type: ChannelType) -> dict[str, str | bool]:
    """The chosen type's settings as posted: an empty field is not set, and so is
    a checkbox left as its default."""
    values: dict[str, str | bool] = {}
    for setting in channel_type.settings:
        key = setting_key(channel_type.name, setting)
        if is_checkbox(setting):
            checked = form.get(key) == "on"
            if checked != setting.default:
                values[setting.name] = checked
            continue
        text = str(form.get(key) or "")
        if text.strip():
            values[setting.name] = text
    return values


def headers_text(headers: Mapping[str, str]) -> str:
    """Stored headers as the form shows them: ``Name: value`` lines, values masked."""
    return "\n".join(f"{name}: {mask_secret(value)}" for name, value in headers.items())


def headers_from_text(text: str, stored: Mapping[str, str]) -> dict[str, str]:
    """``Name: value`` lines as headers. A line that still shows a stored header's
    masked value keeps the stored value; a header whose line is gone is removed."""
    if len(text) > MAX_HEADERS_TEXT:
        raise FormError(_("headers are too long (%(most)s characters at most)", most=MAX_HEADERS_TEXT))
    headers: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise FormError(_("headers are one 'Name: value' a line, got %(line)s…", line=repr(name[:40])))
        kept = stored.get(name)
        headers[name] = kept if kept is not None and value == mask_secret(kept) else value
    return headers
