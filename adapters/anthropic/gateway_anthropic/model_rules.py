"""Which request parameters a Claude model family accepts (pure, no I/O).

Anthropic's newer models refuse some combinations older ones took: Claude 4.5 and
later, and Opus 4.1, answer 400 to a request that sets both ``temperature`` and
``top_p`` (the Gemini command-line client sends both by default). Each
:class:`ParameterRule` names the models it is for and the parameter it drops when
another is present; :func:`apply_rules` applies every rule to a Messages body
for its upstream model. The anthropic channel applies them to requests converted
from another protocol, and to Anthropic clients' own requests only when the
channel's setting ``parameter_rules`` is on (a client that speaks Anthropic chose
its parameters itself).

Model names are read as Anthropic, Bedrock and Vertex write them:
``claude-sonnet-4-5-20250929``, ``anthropic.claude-opus-4-1-20250805-v1:0``,
``claude-haiku-4-5@20251001``; the older ``claude-3-5-sonnet-…`` order reads too.
A name that is not a Claude version (an alias of the operator's own) matches no rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

FAMILIES = frozenset(("opus", "sonnet", "haiku"))


@attrs.frozen
class ClaudeVersion:
    family: str
    major: int
    minor: int

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)


def claude_version(model: str) -> ClaudeVersion | None:
    """The family and version a Claude model name says, or ``None``."""
    _, found, rest = model.lower().partition("claude-")
    if not found:
        return None
    words = rest.replace("@", "-").replace(".", "-").replace(":", "-").split("-")
    family = next((w for w in words if w in FAMILIES), None)
    numbers = [int(w) for w in words if w.isdigit() and len(w) <= 2]
    if family is None or not numbers:
        return None
    return ClaudeVersion(family, numbers[0], numbers[1] if len(numbers) > 1 else 0)


@attrs.frozen
class ParameterRule:
    """For the models ``applies`` accepts: ``drop`` goes when ``keep`` is there too."""

    applies: Callable[[ClaudeVersion], bool]
    keep: str
    drop: str
    why: str


def _refuses_temperature_with_top_p(version: ClaudeVersion) -> bool:
    return version.at_least(4, 5) or (version.family == "opus" and version.at_least(4, 1))


RULES = (
    ParameterRule(_refuses_temperature_with_top_p, keep="temperature", drop="top_p",
                  why="Claude 4.5 and later and Opus 4.1 refuse temperature and top_p together"),
)  # fmt: skip


def apply_rules(body: dict[str, Any], model: str) -> dict[str, Any]:
    """``body`` without the parameters ``model`` refuses (the same object when nothing goes)."""
    version = claude_version(model)
    if version is None:
        return body
    for rule in RULES:
        if rule.applies(version) and body.get(rule.keep) is not None and rule.drop in body:
            body = {k: v for k, v in body.items() if k != rule.drop}
    return body
