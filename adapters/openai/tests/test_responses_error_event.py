"""An upstream ``error`` event in a Responses stream reaches the client as
``response.failed`` (Codex drops event types it does not know)."""

from __future__ import annotations

import json

import openai
from aiohttp import web

from gateway_core.testing import free_port


async def test_an_upstream_error_event_ends_the_stream_with_response_failed(seed, start_gateway):
    async def responses(request: web.Request) -> web.StreamResponse:
        out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await out.prepare(request)
        created = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-x", "output": []}}
        await out.write(f"event: response.created\ndata: {json.dumps(created)}\n\n".encode())
        error = {"type": "error", "sequence_number": 1, "code": "server_error", "message": "The model had an error", "param": None}
        await out.write(f"event: error\ndata: {json.dumps(error)}\n\n".encode())
        await out.write_eof()
        return out

    app = web.Application()
    app.router.add_post("/v1/responses", responses)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        user = seed.user("alice", balance_usd=5)
        _, secret = seed.key(user)
        seed.channel("up", type="openai", base_url=f"http://127.0.0.1:{port}", models=["gpt-x"], settings={"responses": True})
        gateway = start_gateway()
        client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
        stream = await client.responses.create(model="gpt-x", input="hi", stream=True)
        kinds = [event.type async for event in stream]
        assert kinds[-1] == "response.failed", kinds
    finally:
        await runner.cleanup()
