"""How much a model should reason: one table between effort names and token budgets.

Clients ask for reasoning in two ways: by name (an effort: ``low``, ``medium``,
``high`` …) or by a number of tokens (a thinking budget). Channels take one or the
other. When a request crosses from one way to the other, the channel types read
the client's wire field and convert it with this table, so every pair of protocols
agrees on what "medium" means.

=========  ================  =====================================
effort     budget (tokens)   a budget of … reads as this effort
=========  ================  =====================================
none       0                 0, or below 0 but -1: no reasoning
minimal    0
low        1,024             1 to 4,096
medium     8,192             4,097 to 16,384, and -1 (dynamic)
high       24,576            more than 16,384
xhigh      32,768
=========  ================  =====================================

A budget never reads as ``minimal`` or ``xhigh``: only some reasoning models take
them, while every one takes ``low``, ``medium`` and ``high``;
:func:`common_effort` clamps a client's effort name to those three the same way.
"""

from __future__ import annotations

EFFORT_BUDGETS: dict[str, int] = {"none": 0, "minimal": 0, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768}
DYNAMIC_BUDGET = -1  # "the model decides how much": read as medium
_COMMON = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_UPPER_BOUNDS = ((4096, "low"), (16_384, "medium"))  # budgets up to each bound read as that effort


def budget_for_effort(effort: object) -> int:
    """The token budget of an effort name (any case; 0 for none or an unknown name)."""
    return EFFORT_BUDGETS.get(effort.lower(), 0) if isinstance(effort, str) else 0


def effort_for_budget(budget: object) -> str | None:
    """The effort a token budget reads as (``None``: no reasoning, or not a number).
    ``-1`` (dynamic) reads as ``medium``."""
    if not isinstance(budget, int) or isinstance(budget, bool):
        return None
    if budget == DYNAMIC_BUDGET:
        return "medium"
    if budget <= 0:
        return None
    for bound, effort in _UPPER_BOUNDS:
        if budget <= bound:
            return effort
    return "high"


def common_effort(effort: object) -> str | None:
    """An effort name as one every reasoning model takes: ``minimal`` as ``low``,
    ``xhigh`` and ``max`` as ``high``; ``None`` for none or an unknown name."""
    return _COMMON.get(effort.lower()) if isinstance(effort, str) else None
