"""Per-channel settings: the typed schema a channel type declares, and the one
validator that turns what an operator typed into the values a channel stores.

A channel type lists its settings in :attr:`gateway_core.ChannelType.settings`::

    DELAY_MS = Setting("delay_ms", "int", default=30, min=0, max=60_000, help="milliseconds between streamed words")

The admin layer validates a channel's settings against its type's schema with
:func:`validate_settings` whenever a channel is added or edited (``relaygate channel
add|edit --setting NAME=VALUE``, the console's channel form), so values are stored
typed. The channel type reads one with :meth:`Setting.read`: the stored value, else
the default. Values stored before settings were validated (text such as ``"true"``
or ``"30"``) are read as the validator would convert them; one it would refuse reads
as the default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

SettingKind = Literal["str", "int", "float", "bool", "choice"]
SettingValue = str | int | float | bool
KINDS: tuple[SettingKind, ...] = ("str", "int", "float", "bool", "choice")
TRUE_WORDS = frozenset(("true", "yes", "on", "1"))
FALSE_WORDS = frozenset(("false", "no", "off", "0"))
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_WHOLE = re.compile(r"[+-]?\d+")


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


class SettingError(ValueError):
    """A value (or a name) the schema refuses; the message names the setting.
    ``name`` is the setting's name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


@attrs.frozen
class Setting:
    """One setting of a channel type.

    ``kind`` is what it holds: ``str`` (any text), ``int`` (a whole number),
    ``float`` (a number), ``bool`` (true or false) or ``choice`` (one of
    ``choices``). ``min`` and ``max`` bound an ``int`` or ``float``. ``default`` is
    what :meth:`read` gives when the channel does not set it: a value of the kind,
    or ``None`` for "not set" (the channel type then decides; a ``bool`` whose
    default is ``None`` has three states). ``help`` says what it does, for people
    (``relaygate channel types``, the console's channel form).
    """

    name: str
    kind: SettingKind = "str"
    default: SettingValue | None = None
    help: str = ""
    choices: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    min: float | None = None
    max: float | None = None

    def __attrs_post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"a setting's name is lower case letters, digits and '_', got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"setting {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError(f"setting {self.name!r}: choices go with the kind 'choice', and it needs them")
        if (self.min is not None or self.max is not None) and self.kind not in ("int", "float"):
            raise ValueError(f"setting {self.name!r}: min and max bound an int or a float only")
        if self.default is not None:
            try:
                converted = self.convert(self.default)
            except SettingError as error:
                raise ValueError(f"the default of {error}") from None
            if type(converted) is not type(self.default):
                raise ValueError(f"setting {self.name!r}: the default {self.default!r} is not of its kind ({self.kind})")

    @property
    def accepts(self) -> str:
        """What a value may be, for people: ``a whole number from 0 to 60000``."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "str":
            return "text"
        what = "a whole number" if self.kind == "int" else "a number"
        low, high = _show(self.min), _show(self.max)
        if low is not None and high is not None:
            return f"{what} from {low} to {high}"
        if low is not None:
            return f"{what} of at least {low}"
        return f"{what} of at most {high}" if high is not None else what

    def convert(self, value: object) -> SettingValue:
        """``value`` as this setting stores it: text (from the CLI or a form) is
        read as the kind says, a typed value (from JSON) is checked. Raises
        :class:`SettingError` saying what is wrong."""
        converted: SettingValue
        if self.kind == "str":
            if not isinstance(value, str):
                raise self._refuse(value)
            return value
        if self.kind == "choice":
            converted = value.strip() if isinstance(value, str) else ""
            if converted not in self.choices:
                raise self._refuse(value)
            return converted
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            word = value.strip().lower() if isinstance(value, str) else None
            if word in TRUE_WORDS or word in FALSE_WORDS:
                return word in TRUE_WORDS
            raise self._refuse(value, " (or yes/no, on/off, 1/0)")
        converted = self._number(value)
        if self.min is not None and converted < self.min:
            raise SettingError(self.name, f"setting {self.name!r} must be at least {_show(self.min)}, got {value!r}")
        if self.max is not None and converted > self.max:
            raise SettingError(self.name, f"setting {self.name!r} must be at most {_show(self.max)}, got {value!r}")
        return converted

    def read(self, settings: Mapping[str, Any]) -> Any:
        """This setting's value in a channel's ``settings``: the stored value, else
        :attr:`default`. A value stored before settings were validated is read as
        :meth:`convert` reads it; one it refuses reads as the default."""
        value = settings.get(self.name)
        if value is None:
            return self.default
        try:
            return self.convert(value)
        except SettingError:
            return self.default

    def _number(self, value: object) -> int | float:
        if isinstance(value, bool):
            raise self._refuse(value)
        if self.kind == "int":
            if isinstance(value, int):
                return value
            text = value.strip() if isinstance(value, str) else ""
            if _WHOLE.fullmatch(text):
                return int(text)
            raise self._refuse(value)
        if isinstance(value, (int, float)):
            number = float(value)
        else:
            try:
                number = float(value.strip()) if isinstance(value, str) else math.nan
            except ValueError:
                number = math.nan
        if not math.isfinite(number):
            raise self._refuse(value)
        return number

    def _refuse(self, value: object, also: str = "") -> SettingError:
        return SettingError(self.name, f"setting {self.name!r} must be {self.accepts}{also}, got {value!r}")


FORWARD_TRACEPARENT = Setting(
    "forward_traceparent", "bool", default=False,
    help="send each request's W3C traceparent and tracestate to this channel's upstream (off: they never leave the gateway)",
)  # fmt: skip
# settings every channel accepts, whatever its type (the core reads them)
CORE_SETTINGS: tuple[Setting, ...] = (FORWARD_TRACEPARENT,)


def validate_settings(schema: Sequence[Setting], raw: Mapping[str, object]) -> dict[str, SettingValue]:
    """The settings to store: each value of ``raw`` converted by its setting in
    ``schema`` (see :meth:`Setting.convert`); a ``None`` value is left out (not set).
    Raises :class:`SettingError` for a name the schema does not declare (listing the
    ones it does) or a value its setting refuses."""
    known = {setting.name: setting for setting in schema}
    unknown = sorted(name for name in raw if name not in known)
    if unknown:
        offered = f"known: {', '.join(known)}" if known else "this channel type has none"
        listed = ", ".join(repr(name) for name in unknown)
        raise SettingError(unknown[0], f"unknown setting{'s' if len(unknown) > 1 else ''} {listed} ({offered})")
    return {name: known[name].convert(value) for name, value in raw.items() if value is not None}


def setting_text(value: object) -> str:
    """A stored value as an operator types it (``true``, ``30``, ``v1beta``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _show(bound: float | None) -> str | None:
    if bound is None:
        return None
    return str(int(bound)) if float(bound).is_integer() else str(bound)
