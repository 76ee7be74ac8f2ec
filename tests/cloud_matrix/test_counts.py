"""Anthropic's count_tokens (the official ``anthropic`` SDK) on every cloud channel kind:
Vertex counts (Gemini's ``:countTokens``, Claude's ``count-tokens:rawPredict``) and the
client gets Vertex's number; Azure and Bedrock serve no count for these models, so the
gateway estimates it locally as documented (docs/adapters/anthropic.md#count_tokens,
docs/adapters/bedrock.md): a real tokenizer's count of the text plus 3 tokens per message
and 3 for the answer, said so in ``x-relaygate-token-count``, the row marked estimated,
nothing sent upstream. Counting is never billed."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from gateway_anthropic.fake_upstream import input_tokens
from gateway_gemini.fake_upstream import prompt_tokens

from .world import KINDS, World

TEXT = "count these words please"  # 4 tokens in o200k_base
UPSTREAM_COUNT = {"vertex-gemini": ("countTokens", prompt_tokens), "vertex-claude": ("count-tokens:rawPredict", input_tokens)}


@pytest.mark.parametrize("kind", list(KINDS))
def test_count_tokens(world: World, clients: dict[str, Any], kind: str) -> None:
    cell = KINDS[kind]
    client: anthropic.Anthropic = clients["messages"].client
    fake = world.fake(cell)
    sent_before = len(fake.requests)
    raw = client.messages.with_raw_response.count_tokens(model=cell.model, messages=[{"role": "user", "content": TEXT}])
    count = raw.parse().input_tokens
    row = world.last_row()
    assert (row["endpoint"], row["model"], row["status"], row["cost_micros"]) == ("count_tokens", cell.model, 200, 0)
    assert world.seed.rows("SELECT id FROM ledger WHERE request_id = ?", (row["request_id"],)) == []
    if kind in UPSTREAM_COUNT:
        method, counted = UPSTREAM_COUNT[kind]
        sent = fake.requests[-1]
        assert len(fake.requests) == sent_before + 1 and sent["path"].endswith(method)
        assert count == counted(sent["body"]) and "x-relaygate-token-count" not in raw.headers
        assert (row["channel_name"], row["estimated"]) == (kind, 0)
    else:
        assert len(fake.requests) == sent_before  # no counting endpoint upstream: estimated here
        assert raw.headers["x-relaygate-token-count"] == "estimate; encoding=o200k_base"
        assert count == 4 + 3 + 3 and row["estimated"] == 1
