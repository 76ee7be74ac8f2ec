"""Text delta frames read by their bytes give the events parsing them gives."""

from __future__ import annotations

import orjson
import pytest

from gateway_anthropic.channel import FrameDecoder
from gateway_anthropic.delta_frames import delta_template
from gateway_anthropic.messages_stream import EventDecoder
from gateway_core.sse import frame_fields


def _frame(name: str, payload: dict) -> bytes:
    return f"event: {name}\ndata: ".encode() + orjson.dumps(payload) + b"\n\n"


def _start(index: int, kind: str = "text") -> bytes:
    block = {"type": kind, "text": ""} if kind == "text" else {"type": kind, "thinking": ""} if kind == "thinking" else {"type": kind}
    return _frame("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def _text(index: int, text: str) -> bytes:
    return _frame("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})


MESSAGE_START = _frame("message_start", {"type": "message_start", "message": {"id": "m", "model": "x", "usage": {"input_tokens": 3, "output_tokens": 1}}})
FINISH = [
    _frame("content_block_stop", {"type": "content_block_stop", "index": 0}),
    _frame("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
    _frame("message_stop", {"type": "message_stop"}),
]


def _parsed(frames: list[bytes]) -> list:
    """The events of ``frames`` each parsed whole (the decoder before templates)."""
    decoder, events = EventDecoder(), []
    for raw in frames:
        name, data = frame_fields(raw)
        if data:
            payload = orjson.loads(data)
            events.append(tuple(decoder.feed(payload if "type" in payload else {**payload, "type": name}, raw)))
    return events


def _decoded(frames: list[bytes]) -> tuple[list, FrameDecoder]:
    decoder = FrameDecoder()
    return [decoder.decode(raw).events for raw in frames if frame_fields(raw)[1]], decoder


TEXTS = ["Hello", " world", "", "naïve ✓", 'a "quote"', "back\\slash", "tab\there", "line\nbreak", "probe", "x" * 300]


@pytest.mark.parametrize("rest", [TEXTS, TEXTS[1:], TEXTS[4:] + TEXTS[:4]])
def test_a_text_block_decodes_as_it_parses_whatever_its_texts(rest):
    frames = [MESSAGE_START, _start(0), _text(0, "First"), *[_text(0, t) for t in rest], *FINISH, _text(0, "after the end")]
    decoded, decoder = _decoded(frames)
    assert decoded == _parsed(frames)
    assert decoder._template is not None and decoder._template.index == 0


def test_other_blocks_and_frames_that_differ_beyond_the_text_are_parsed():
    extra = _frame("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x", "more": 1}})
    frames = [
        MESSAGE_START, _start(0), _text(0, "one"), extra, _text(0, "two"),
        _frame("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _text(0, "to a stopped block"), _start(1, "thinking"),
        _frame("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "thinking_delta", "thinking": "hm"}}),
        _start(2), _text(2, "three"), *FINISH[1:],
    ]  # fmt: skip
    decoded, _ = _decoded(frames)
    assert decoded == _parsed(frames)
    texts = [e.text for events in decoded for e in events if hasattr(e, "text")]
    assert texts == ["one", "x", "two", "hm", "three"]


def test_a_frame_whose_text_is_not_the_member_read_makes_no_template():
    # the text's bytes first found in another member: the probe put there is not the text read
    raw = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","note":"b","text":"b"}}\n\n'
    payload = orjson.loads(frame_fields(raw)[1])
    assert delta_template(raw, payload, "b", 0) is None
    frames = [MESSAGE_START, _start(0), raw, _text(0, "c")]
    assert _decoded(frames)[0] == _parsed(frames)


def test_a_text_that_needs_escapes_makes_no_template_and_the_next_plain_one_does():
    frames = [MESSAGE_START, _start(0), _text(0, 'say "hi"'), _text(0, "plain"), _text(0, "again")]
    decoded, decoder = _decoded(frames)
    assert decoded == _parsed(frames)
    assert decoder._template is not None
