"""Creating a new adapter package from the template in ``gateway_core/adapter_template/``
(package data, so an installed relaygate has it too).

The template is a working, tested adapter named ``skeleton``: a distribution
``relaygate-skeleton`` with the import package ``relaygate_skeleton``, its entry
point, a channel type, a fake upstream and tests that use the test kit.
:func:`create_adapter` copies it with every ``skeleton`` / ``Skeleton`` /
``SKELETON`` in file names and contents replaced by the new name (the CLI's
``relaygate new-adapter NAME`` is meant to call it).
"""

from __future__ import annotations

import keyword
import os
import re
import shutil
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent.parent / "adapter_template"
PLACEHOLDER = "skeleton"
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_SKIPPED = frozenset(("__pycache__", ".pytest_cache", ".mypy_cache"))


def create_adapter(name: str, target_dir: str | os.PathLike[str], *, template: str | os.PathLike[str] = TEMPLATE) -> Path:
    """Write a new adapter package named ``name`` into ``target_dir`` (created;
    it must not exist or be empty) and return its path.

    ``name`` is the channel type's name and the entry point's: lower-case letters,
    digits and underscores, starting with a letter (``ollama``, ``my_llm``). The
    package is ``relaygate_<name>``, the distribution ``relaygate-<name>``.
    Raises ``ValueError`` for a bad name, a target in use or a missing template.
    """
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise ValueError(
            f"{name!r} is not a usable adapter name: use lower-case letters, digits and underscores, starting with a letter"
        )
    source, target = Path(template), Path(target_dir)
    if not (source / "pyproject.toml").is_file():
        raise ValueError(f"no adapter template at {source} (the relaygate installation is incomplete)")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(f"{target} already exists and is not an empty folder")
    replacements = {PLACEHOLDER: name, PLACEHOLDER.capitalize(): _camel(name), PLACEHOLDER.upper(): name.upper()}
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if _SKIPPED.intersection(relative.parts) or path.suffix == ".pyc":
            continue
        destination = target / _render(str(relative), replacements)
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(_render(path.read_text(encoding="utf-8"), replacements), encoding="utf-8")
        shutil.copymode(path, destination)
    return target


def _render(text: str, replacements: dict[str, str]) -> str:
    for placeholder, value in replacements.items():
        text = text.replace(placeholder, value)
    return text


def _camel(name: str) -> str:
    return "".join(word.capitalize() for word in name.split("_"))
