"""The Responses WebSocket's conversation (``responses_socket.py``) on its own: the
request body it makes of a message, the connection's memory of its last response
and its bound, error messages and ``stream_id``."""

from __future__ import annotations

import orjson
import pytest

from gateway_core import InvalidRequestError
from gateway_openai.responses_socket import ResponsesSocket

USER = {"type": "message", "role": "user", "content": "hi"}
ANSWER = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}


def run(socket: ResponsesSocket, message: dict, response_id: str = "resp_1") -> dict:
    """One response: the body sent, its output item and completion observed."""
    body = orjson.loads(socket.request(orjson.dumps(message).decode()))
    socket.event(orjson.dumps({"type": "response.output_item.done", "item": ANSWER}))
    socket.event(orjson.dumps({"type": "response.completed", "response": {"id": response_id, "output": [ANSWER]}}))
    socket.finished()
    return body


def test_the_body_is_the_message_without_its_envelope_and_always_streams():
    body = run(ResponsesSocket(), {"type": "response.create", "stream_id": "a", "model": "m", "input": "hi", "store": False, "stream": False})
    assert body == {"model": "m", "input": "hi", "store": False, "stream": True}


def test_the_last_response_is_continued_from_memory_and_any_other_id_is_left_alone():
    socket = ResponsesSocket()
    run(socket, {"type": "response.create", "model": "m", "input": [USER]}, "resp_1")
    body = run(socket, {"type": "response.create", "model": "m", "input": [USER], "previous_response_id": "resp_1"}, "resp_2")
    assert "previous_response_id" not in body and body["input"] == [USER, ANSWER, USER]
    older = run(socket, {"type": "response.create", "model": "m", "input": [USER], "previous_response_id": "resp_1"})
    assert older["previous_response_id"] == "resp_1" and older["input"] == [USER]  # only the last one is remembered


def test_a_conversation_over_the_bound_is_not_remembered():
    socket = ResponsesSocket(max_kept_chars=50)
    run(socket, {"type": "response.create", "model": "m", "input": [USER]}, "resp_1")
    assert socket.last is None


def test_a_failed_response_keeps_the_previous_memory():
    socket = ResponsesSocket()
    run(socket, {"type": "response.create", "model": "m", "input": [USER]}, "resp_1")
    socket.request(orjson.dumps({"type": "response.create", "model": "m", "input": [USER]}).decode())
    socket.event(orjson.dumps({"type": "response.failed", "response": {"id": "resp_2"}}))
    socket.finished()
    assert socket.last is not None and socket.last[0] == "resp_1"


def test_errors_carry_the_status_and_the_lane():
    socket = ResponsesSocket()
    socket.request(orjson.dumps({"type": "response.create", "model": "m", "input": "x", "stream_id": "lane"}).decode())
    message = orjson.loads(socket.error(429, b'{"error": {"type": "rate_limit_error", "code": "rate_limit_exceeded", "message": "slow down", "param": null}}', "req_1"))
    assert message == {"type": "error", "status": 429, "stream_id": "lane",
                       "error": {"type": "rate_limit_error", "code": "rate_limit_exceeded", "message": "slow down", "param": None}}  # fmt: skip
    assert orjson.loads(socket.event(b'{"type":"response.created"}') or "")["stream_id"] == "lane"
    plain = orjson.loads(socket.error(502, b"<html>bad gateway</html>", "req_2"))
    assert plain["status"] == 502 and plain["error"]["type"] == "server_error" and "bad gateway" in plain["error"]["message"]


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"type": "response.cancel"}', '{"model": "m"}'])
def test_messages_that_are_not_requests_are_refused(text):
    with pytest.raises(InvalidRequestError):
        ResponsesSocket().request(text)


def test_codex_acknowledgement_is_accepted_silently():
    assert ResponsesSocket().request('{"type": "response.processed", "response_id": "resp_1"}') is None
