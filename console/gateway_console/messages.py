"""The console's message catalogues: extracting every message from the templates
and the Python code, and bringing each language's ``.po`` file up to date.

``python -m gateway_console.messages`` adds new messages to every catalogue
(empty, to be translated), keeps the translations of unchanged ones and marks the
translations of changed ones fuzzy (not shown until someone checks them).
"""

from __future__ import annotations

from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from .i18n import LANGUAGES, LOCALE_DIR

PACKAGE = Path(__file__).parent
METHODS = [("templates/**.html", "jinja2"), ("**.py", "python")]
OPTIONS = {"templates/**.html": {"extensions": "jinja2.ext.i18n", "trimmed": "true", "newstyle_gettext": "true"}}
KEYWORDS = {"_": None, "N_": None, "n_": (1, 2), "gettext": None, "ngettext": (1, 2)}


def extract() -> Catalog:
    """Every message of the console, with where it is used."""
    catalog = Catalog(project="relaygate-console", msgid_bugs_address=None, charset="utf-8")
    found = extract_from_dir(str(PACKAGE), METHODS, OPTIONS, KEYWORDS, strip_comment_tags=True)
    for filename, lineno, message, comments, context in found:
        catalog.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    return catalog


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
