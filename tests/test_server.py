"""``relaygate serve`` as a real process: serving, graceful shutdown, log lines
(on each ``--server``; more of each server's behaviours in test_server_choice.py)."""

from __future__ import annotations

import json
import signal
import threading
import time

import openai
import pytest

from gateway_core.testing import GatewayProcess


SERVERS = pytest.mark.parametrize("server", ("hypercorn", "uvicorn"))


@SERVERS
def test_sigterm_lets_an_inflight_stream_finish_and_records_it(seed, relaygate_config, demo_key, server):
    gateway = GatewayProcess(relaygate_config.db_path, args=["--server", server]).start()
    try:
        client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=demo_key, max_retries=0)
        stream = client.chat.completions.create(
            model="demo-chat", messages=[{"role": "user", "content": "one two three four five"}], stream=True
        )
        pieces = [next(iter(stream)).choices[0].delta.content]
        # the stream is under way (about 1.3 s in all): ask the server to stop
        threading.Timer(0.1, lambda: gateway.process.send_signal(signal.SIGTERM)).start()
        started = time.monotonic()
        for chunk in stream:
            if chunk.choices:
                pieces.append(chunk.choices[0].delta.content or "")
        assert "".join(pieces).endswith("You said: one two three four five")
        assert gateway.process.wait(timeout=20) == 0
        assert time.monotonic() - started < 15
    finally:
        gateway.kill()
    rows = seed.rows("SELECT status, end_reason, output_tokens FROM usage_logs")
    assert rows and rows[-1]["status"] == 200 and rows[-1]["end_reason"] == "done"
    # new connections are refused once it stopped
    with pytest.raises(openai.APIConnectionError):
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=demo_key, max_retries=0).models.list()


@SERVERS
def test_log_lines_are_json_with_the_request_id_and_no_secret(seed, relaygate_config, demo_key, server):
    with GatewayProcess(relaygate_config.db_path, args=["--server", server]) as gateway:
        client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=demo_key, max_retries=0)
        raw = client.chat.completions.with_raw_response.create(model="demo-chat", messages=[{"role": "user", "content": "hi"}])
        request_id = raw.headers["x-request-id"]
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=gateway.url + "/v1", api_key="sk-wrong-secret-123", max_retries=0).models.list()
        gateway.terminate()
    output = gateway.output()
    events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    request_events = [e for e in events if e.get("event") == "request"]
    assert any(e["request_id"] == request_id and e["status"] == 200 for e in request_events)
    assert any(e["status"] == 401 for e in request_events)
    assert demo_key not in output and "sk-wrong-secret-123" not in output
    assert all(line.startswith("{") for line in output.splitlines() if line.strip())  # the server's own records too
