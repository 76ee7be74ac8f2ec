"""The test kit's reader of recorded wire examples (gateway_core.testing.Examples)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway_core.testing import Examples


@pytest.fixture
def folder(tmp_path: Path) -> Examples:
    files = {
        "answer.json": b'{"id": "a1", "text": "hi"}',
        "chat.sse": b'data: {"n": 1}\n\n: a comment\n\ndata: {"n": 2}\r\n\r\ndata: [DONE]\n\n',
        "named.sse": b'event: start\ndata: {"type": "start"}\n\nevent: stop\ndata: {"type": "stop"}\n\n',
        "broken.sse": b'data: {"n": 1}\n\ndata: {"n": 2}',
        "lines.ndjson": b'{"n": 1}\n\n{"n": 2}\r\n{"n": 3}',
        "array.json": b'[{"n": 1},\r\n{"n": 2}]',
        "page.html": b"<html>bad gateway</html>",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return Examples(tmp_path)


def test_whole_files(folder):
    assert folder.json("answer.json") == {"id": "a1", "text": "hi"}
    assert folder.raw("page.html") == b"<html>bad gateway</html>"
    assert folder.names("*.sse") == ["broken.sse", "chat.sse", "named.sse"]


def test_sse_transcripts(folder):
    assert folder.frames("chat.sse")[1] == b": a comment\n\n"
    assert folder.sse("chat.sse") == [{"n": 1}, {"n": 2}]  # no comment, no final [DONE]
    assert folder.events("named.sse") == [("start", {"type": "start"}), ("stop", {"type": "stop"})]
    with pytest.raises(ValueError, match="broken.sse: the last SSE frame is not terminated"):
        folder.frames("broken.sse")


def test_ndjson_and_json_array_transcripts(folder):
    assert folder.ndjson("lines.ndjson") == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert folder.json_array("array.json") == [{"n": 1}, {"n": 2}]


def test_a_missing_example_names_the_folder(folder, tmp_path):
    with pytest.raises(FileNotFoundError, match=f"no recorded example 'nope.json' in {tmp_path}"):
        folder.json("nope.json")


@pytest.mark.usefixtures("bundled_adapters")  # an adapter's examples, read from its package
def test_an_adapters_examples_from_its_package_and_a_tests_own(examples):
    openai = Examples.of("gateway_openai")
    assert openai.root == Path(__file__).resolve().parents[1] / "adapters" / "openai" / "tests" / "examples"
    assert "chat_request_simple.json" in openai.names()
    assert Examples.beside(openai.root / "test_x.py").root == openai.root
    assert examples.root == Path(__file__).resolve().parent / "examples"  # the fixture: beside this module
