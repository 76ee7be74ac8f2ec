"""The console's languages: gettext catalogues read from ``locale/<code>/LC_MESSAGES/messages.po``.

The ``.po`` files are the only source: they are compiled in memory when this
module is imported (Babel's reader and ``.mo`` writer), so an installed console
needs no build step and a catalogue can never be older than its source.

A request's language is set once per request (:func:`use`) in a context
variable; templates (``{% trans %}``, ``_()``) and Python messages (:func:`_`)
read it from there. English is the source language and the fallback of every
message a catalogue lacks.
"""

from __future__ import annotations

import gettext
import io
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import attrs
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE_DIR = Path(__file__).parent / "locale"
LANG_COOKIE = "rg_lang"
LANG_PARAM = "lang"


@attrs.frozen
class Language:
    code: str  # the catalogue's folder under locale/ and the value of ?lang= and the cookie
    tag: str  # the BCP 47 tag of <html lang>
    name: str  # the language's own name, shown in the switch


LANGUAGES = (
    Language("en", "en", "English"),
    Language("zh_Hans", "zh-Hans", "简体中文"),
)
DEFAULT = LANGUAGES[0]
_BY_CODE = {language.code.lower(): language for language in LANGUAGES}


def _load(code: str) -> gettext.NullTranslations:
    source = LOCALE_DIR / code / "LC_MESSAGES" / "messages.po"
    if not source.exists():
        return gettext.NullTranslations()
    with source.open("rb") as po:
        catalog = read_po(po, locale=code)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)  # fuzzy entries are left out, as msgfmt does
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


CATALOGUES = {language.code: _load(language.code) for language in LANGUAGES}
_current: ContextVar[Language] = ContextVar("console_language", default=DEFAULT)


def find(value: str | None) -> Language | None:
    """The language named by a ``?lang=`` value, a cookie or one Accept-Language tag."""
    if not value:
        return None
    value = value.strip().replace("-", "_").lower()
    if value in _BY_CODE:
        return _BY_CODE[value]
    primary = value.split("_")[0]
    if primary == "zh":  # zh, zh-CN, zh-SG, zh-Hans…: the one Chinese catalogue is Simplified
        return _BY_CODE["zh_hans"]
    return _BY_CODE.get(primary)


def from_accept_language(header: str | None) -> Language | None:
    """The first language of ``Accept-Language`` (by quality, then order) that the console has."""
    choices: list[tuple[float, int, str]] = []
    for index, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if tag and tag != "*" and quality > 0:
            choices.append((-quality, index, tag))
    for _, _, tag in sorted(choices):
        language = find(tag)
        if language is not None:
            return language
    return None


def choose(query: str | None, cookie: str | None, accept_language: str | None) -> Language:
    """``?lang=`` first, then the cookie, then the browser's Accept-Language, then English."""
    return find(query) or find(cookie) or from_accept_language(accept_language) or DEFAULT


def use(language: Language) -> None:
    """Make ``language`` the current request's language."""
    _current.set(language)


def current() -> Language:
    return _current.get()


def gettext_(message: str) -> str:
    return CATALOGUES[_current.get().code].gettext(message)


def ngettext_(singular: str, plural: str, n: int) -> str:
    return CATALOGUES[_current.get().code].ngettext(singular, plural, n)


def pgettext_(context: str, message: str) -> str:
    return CATALOGUES[_current.get().code].pgettext(context, message)


def _(message: str, **values: object) -> str:
    """``message`` in the current language, ``%(name)s`` placeholders filled from ``values``."""
    translated = gettext_(message)
    return translated % values if values else translated


def N_(message: str) -> str:
    """Marks ``message`` for the catalogue where it is defined; it is translated where it is shown."""
    return message


PERIODS = {"daily": N_("daily"), "weekly": N_("weekly"), "monthly": N_("monthly")}


TEAM_ROLES = {  # one's role in a team (docs/teams.md), as shown
    "site": N_("site admin"), "admin": N_("team admin"), "member": N_("member"), "viewer": N_("viewer"),
}


def team_role(role: str) -> str:
    return _(TEAM_ROLES[role]) if role in TEAM_ROLES else role


def period_name(period: str) -> str:
    """A budget's period (``daily``, …) as shown."""
    return _(PERIODS[period]) if period in PERIODS else period


COST_PARTS = {  # the parts of a request's cost (a log's detail page)
    "input": N_("input"), "cached": N_("cached"), "cache_write": N_("cache write"), "output": N_("output"),
    "reasoning": N_("reasoning"), "media": N_("media"), "per_request": N_("per request"),
}


def cost_part(name: str) -> str:
    return _(COST_PARTS[name]) if name in COST_PARTS else name.replace("_", " ")


BREAKDOWNS = {  # a dashboard breakdown: its heading and its first column
    "model": (N_("By model"), N_("Model")), "user": (N_("By user"), N_("User")),
    "key": (N_("By key"), N_("Key")), "channel": (N_("By channel"), N_("Channel")),
    "member": (N_("By member"), N_("Member")),
}


def by_title(by: str) -> str:
    return _(BREAKDOWNS[by][0]) if by in BREAKDOWNS else by


def by_column(by: str) -> str:
    return _(BREAKDOWNS[by][1]) if by in BREAKDOWNS else by


def NC_(context: str, message: str) -> str:
    """Like :func:`N_`, for a message of ``context`` (a word that reads differently elsewhere)."""
    return message


LEDGER_CONTEXT = "ledger kind"
LEDGER_KINDS = {  # a wallet change's kind (the ledger's ``kind`` column) as shown
    "capture": NC_("ledger kind", "request"), "topup": NC_("ledger kind", "top-up"), "redemption": NC_("ledger kind", "redemption"),
    "adjustment": NC_("ledger kind", "adjustment"), "refund": NC_("ledger kind", "refund"), "hold": NC_("ledger kind", "hold"),
    "release": NC_("ledger kind", "release"),
}


def ledger_kind(kind: str) -> str:
    return pgettext_(LEDGER_CONTEXT, LEDGER_KINDS[kind]) if kind in LEDGER_KINDS else kind


HEALTH_CONTEXT = "channel health"
HEALTH_STATES = {  # a channel's or an upstream key's state (gateway_core.routing.health_report) as shown
    "ok": NC_("channel health", "ok"), "disabled": NC_("channel health", "disabled"), "open": NC_("channel health", "open"),
    "half_open": NC_("channel health", "half open"), "closed": NC_("channel health", "closed"), "no_key": NC_("channel health", "no key"),
    "no_usable_key": NC_("channel health", "no usable key"), "degraded": NC_("channel health", "degraded"),
}


def health_state(state: str) -> str:
    return pgettext_(HEALTH_CONTEXT, HEALTH_STATES[state]) if state in HEALTH_STATES else state.replace("_", " ")


SETTING_VALUES = (N_("true"), N_("false"))  # a three-state bool setting's choices, as shown
SETTING_CONTEXT = "channel setting"  # the catalogue's context of a channel type's setting names


def setting_label(name: str) -> str:
    """A channel type's setting name as shown: the catalogue's words for it (the
    installed adapters' settings are extracted into it, see :mod:`.messages`), else the name."""
    return pgettext_(SETTING_CONTEXT, name)


def setting_help(help: str) -> str:
    """A setting's help text (an adapter's English) in the current language when the catalogue has it."""
    return gettext_(help) if help else help


def _bound(value: float | None) -> str | None:
    return None if value is None else str(int(value)) if float(value).is_integer() else str(value)


def setting_accepts(setting: Any) -> str:
    """What a setting's value may be, for people (``Setting.accepts`` in the current language)."""
    kind, choices, low, high = setting.kind, setting.choices, _bound(setting.min), _bound(setting.max)
    if kind == "bool":
        return _("true or false")
    if kind == "choice":
        return _("one of %(choices)s", choices=", ".join(choices))
    if kind == "str":
        return _("text")
    whole = kind == "int"
    if low is not None and high is not None:
        return _("a whole number from %(low)s to %(high)s", low=low, high=high) if whole else _("a number from %(low)s to %(high)s", low=low, high=high)
    if low is not None:
        return _("a whole number of at least %(low)s", low=low) if whole else _("a number of at least %(low)s", low=low)
    if high is not None:
        return _("a whole number of at most %(high)s", high=high) if whole else _("a number of at most %(high)s", high=high)
    return _("a whole number") if whole else _("a number")


SCRIPT_MESSAGES = (  # the texts the console's scripts show, given to them in each page ({name}: a value)
    N_("Copied"), N_("Select and copy by hand"), N_("Hide the table"), N_("Show the figures as a table"), N_("Total: {value}"),
    N_("(no model for this key)"), N_("You"), N_("Assistant"), N_("Paste the key's secret first."),
    N_('That secret is not the key "{name}" (its secret starts with {prefix}).'), N_("This key can use no model."), N_("Stopped."),
    N_("Tokens"), N_("Cost"), N_("Request id"), N_("{input} in · {output} out"), N_("{amount} USD"), N_("not logged yet"),
    N_("The gateway answered {status}"),
)


def script_messages() -> dict[str, str]:
    """The scripts' texts in the current language (none for English: the scripts' own)."""
    if current() is DEFAULT:
        return {}
    return {message: gettext_(message) for message in SCRIPT_MESSAGES}


def n_(singular: str, plural: str, n: int, **values: object) -> str:
    """The form of ``singular``/``plural`` for ``n`` in the current language, ``%(n)s`` and ``values`` filled."""
    return ngettext_(singular, plural, n) % {"n": n, **values}
