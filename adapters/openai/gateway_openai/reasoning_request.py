"""Another protocol's request to reason, as Chat Completions' ``reasoning_effort``.

Anthropic clients ask with ``thinking`` (``{"type": "enabled", "budget_tokens": N}``
or ``{"type": "adaptive"}``, with or without ``output_config.effort``, which names the
effort and wins over the budget), Gemini clients with
``generationConfig.thinkingConfig`` (``thinkingBudget`` or ``thinkingLevel``). Sent
to an openai channel they become ``reasoning_effort`` through
:mod:`gateway_core.reasoning`'s one table (a budget of up to 4,096 tokens is
``low``, up to 16,384 ``medium``, more ``high``; Gemini's dynamic budget -1 and
Anthropic's adaptive thinking without an effort are ``medium``), only ever
``low``, ``medium`` or ``high``, which every OpenAI reasoning model takes. Only for
a model the catalogue marks as a reasoning model: others refuse the field. Thinking
turned off (budget 0, ``disabled``, level ``none``) sends nothing: the model's
default applies, as no effort every reasoning model takes means "none". With an
effort sent, ``temperature`` and ``top_p`` other than 1 are left out (the chat
writer does it): OpenAI's reasoning models refuse them while reasoning.
"""

from __future__ import annotations

from typing import Any

from gateway_core.billing.catalogue import catalogue_model
from gateway_core.reasoning import common_effort, effort_for_budget


def reasoning_effort(extra: dict[str, Any], model: str) -> str | None:
    """The ``reasoning_effort`` to send ``model`` for the reasoning asked in another
    protocol's ``extra`` (``None``: none asked, or the model does not reason)."""
    if "reasoning_effort" in extra:  # an OpenAI client's own: written as it came
        return None
    effort = _asked(extra)
    if effort is None:
        return None
    known = catalogue_model(model)
    return effort if known is not None and known.reasoning else None


def _asked(extra: dict[str, Any]) -> str | None:
    thinking = extra.get("thinking")
    config = extra.get("output_config")
    named = common_effort(config.get("effort")) if isinstance(config, dict) else None
    if isinstance(thinking, dict):
        if thinking.get("type") == "enabled":
            return named or effort_for_budget(thinking.get("budget_tokens"))
        if thinking.get("type") == "adaptive":
            return named or "medium"
        return None  # disabled
    if named is not None:  # effort alone (without thinking): how much work the answer gets
        return named
    generation = extra.get("generationConfig") or extra.get("generation_config")
    config = (generation.get("thinkingConfig") or generation.get("thinking_config")) if isinstance(generation, dict) else None
    if not isinstance(config, dict):
        return None
    level = config.get("thinkingLevel", config.get("thinking_level"))
    if isinstance(level, str):
        return common_effort(level)
    return effort_for_budget(config.get("thinkingBudget", config.get("thinking_budget")))
