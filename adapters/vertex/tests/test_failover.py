"""Failover between a vertex channel and a direct one serving the same model: Vertex
failing before the first byte, the direct Gemini API answers; the usage row names the
channel that answered."""

from __future__ import annotations

import openai

from gateway_core.testing import Fault
from gateway_gemini.fake_upstream import EXPECTED_KEY, FakeGemini

from .fake_vertex import PROJECT

GEMINI = "gemini-2.5-flash"


async def test_vertex_failing_fails_over_to_the_gemini_api(seed, start_gateway, fake_upstream, vertex, oauth, account):
    direct = await fake_upstream(FakeGemini())
    _, secret = seed.key(seed.user("alice"))
    vertex_id = seed.channel("vx", type="vertex", base_url=vertex.url, api_keys=[account.json(oauth.token_uri)], models=[GEMINI],
                             settings={"project": PROJECT}, priority=10)  # fmt: skip
    direct_id = seed.channel("google", type="gemini", base_url=direct.url, api_keys=[EXPECTED_KEY], models=[GEMINI], priority=0)
    client = openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=secret, max_retries=0)

    answer = await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "first"}])
    assert answer.choices[0].message.content == "echo: first" and len(vertex.requests) == 1 and direct.requests == []

    vertex.fail_next(Fault(status=503, body={"error": {"code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}}))
    answer = await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "second"}])
    assert answer.choices[0].message.content == "echo: second"
    assert len(vertex.requests) == 2 and len(direct.requests) == 1
    rows = seed.rows("SELECT channel_id FROM usage_logs ORDER BY id")
    assert [row["channel_id"] for row in rows] == [vertex_id, direct_id]
