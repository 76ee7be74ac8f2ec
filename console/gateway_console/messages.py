"""The console's message catalogues: extracting every message from the templates
and the Python code, and bringing each language's ``.po`` file up to date.

``python -m gateway_console.messages`` adds new messages to every catalogue
(empty, to be translated), keeps the translations of unchanged ones and marks the
translations of changed ones fuzzy (not shown until someone checks them).

Besides the console's own texts, the catalogue holds the names (in the context
``channel setting``) and help texts of the settings of every channel type
installed when it is updated: the channel form shows them in the page's language.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pluggy

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po
from gateway_core.config import config_from_mapping

from .i18n import LANGUAGES, LOCALE_DIR, SETTING_CONTEXT

PACKAGE = Path(__file__).parent
METHODS = [("templates/**.html", "jinja2"), ("**.py", "python")]
OPTIONS = {"templates/**.html": {"extensions": "jinja2.ext.i18n", "trimmed": "true", "newstyle_gettext": "true"}}
KEYWORDS = {"_": None, "N_": None, "NC_": ((1, "c"), 2), "n_": (1, 2), "gettext": None, "ngettext": (1, 2)}


def extract() -> Catalog:
    """Every message of the console, with where it is used."""
    catalog = Catalog(project="relaygate-console", msgid_bugs_address=None, charset="utf-8")
    found = extract_from_dir(str(PACKAGE), METHODS, OPTIONS, KEYWORDS, strip_comment_tags=True)
    for filename, lineno, message, comments, context in found:
        catalog.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    for type_name, setting in installed_settings():
        where = [(f"channel type {type_name}", 0)]
        catalog.add(setting.name, None, where, context=SETTING_CONTEXT)
        if setting.help:
            catalog.add(setting.help, None, where)
    return catalog


def installed_settings() -> list[tuple[str, Any]]:
    """``(channel type, Setting)`` of every channel type the installed plugins register
    (their ``register_channel_types`` hook, called as the gateway calls it)."""
    pm = pluggy.PluginManager("relaygate")
    for entry_point in entry_points(group="relaygate"):
        pm.register(entry_point.load(), name=entry_point.name)
    found: list[Any] = []
    pm.hook.register_channel_types(register=found.append, config=config_from_mapping({}))
    return [(channel_type.name, setting) for channel_type in sorted(found, key=lambda t: t.name) for setting in channel_type.settings]


def po_path(code: str) -> Path:
    return LOCALE_DIR / code / "LC_MESSAGES" / "messages.po"


def update() -> None:
    template = extract()
    for language in LANGUAGES:
        if language.code == "en":  # the source language: its messages are the ids
            continue
        path = po_path(language.code)
        if path.exists():
            with path.open("rb") as po:
                catalog = read_po(po, locale=language.code)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            catalog = Catalog(locale=language.code, project="relaygate-console", charset="utf-8")
        catalog.update(template, no_fuzzy_matching=True)
        catalog.fuzzy = False  # the header is not a translation to check
        with path.open("wb") as po:
            write_po(po, catalog, width=0, omit_header=False, sort_output=False, ignore_obsolete=True)


if __name__ == "__main__":
    update()
