"""What may name a group: one rule for the store, the admin layer and every front."""

from __future__ import annotations

import re

GROUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # no space nor comma: lists of names stay readable


def group_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a group, or ``None`` when it can."""
    if isinstance(name, str) and GROUP_NAME.fullmatch(name):
        return None
    return f"{name!r} is not a group name: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
