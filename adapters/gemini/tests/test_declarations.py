"""Function declarations read once and kept by their bytes: the same tools, bounded memory."""

from __future__ import annotations

import pytest

from gateway_core import InvalidRequestError
from gateway_core.model import Tool
from gateway_gemini.declarations import DECLARATIONS, DeclarationCache
from gateway_gemini.request import request_from_wire


def _declaration(name: str, size: int = 0) -> dict:
    return {
        "name": name,
        "description": "d" * size,
        "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING", "nullable": True}}, "required": ["path"]},
    }


def _body(*declarations: dict) -> dict:
    return {"contents": [{"parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": list(declarations)}]}


def _read(declaration: dict, where: str) -> Tool:
    return Tool(declaration["name"], declaration.get("description"), {"read": where})


def test_a_declaration_sent_again_gives_the_same_tool_as_the_first_reading():
    first = request_from_wire(_body(_declaration("read_file_once")), "gemini-x")
    again = request_from_wire(_body({**_declaration("other")}, _declaration("read_file_once")), "gemini-x")
    assert again.tools[1] is first.tools[0]
    assert first.tools[0].parameters == {
        "type": "object",
        "properties": {"path": {"type": ["string", "null"]}},
        "required": ["path"],
    }


def test_members_in_another_order_are_another_declaration():
    declaration = _declaration("ordered_tool")
    reordered = dict(reversed(list(declaration.items())))
    first, second = request_from_wire(_body(declaration, reordered), "gemini-x").tools
    assert first is not second and first == second


def test_an_invalid_declaration_is_refused_each_time_and_never_kept():
    bad = {"name": "bad_tool", "parameters": "a string"}
    kept = len(DECLARATIONS)
    for position in (0, 1):
        body = _body(*[_declaration("fine_tool")] * position, bad)
        with pytest.raises(InvalidRequestError) as caught:
            request_from_wire(body, "gemini-x")
        assert caught.value.param == f"tools[0].functionDeclarations[{position}].parameters"
    assert len(DECLARATIONS) <= kept + 1  # at most the valid one


def test_a_declaration_orjson_cannot_write_is_read_without_being_kept():
    cache = DeclarationCache()
    huge = {"name": "t", "parameters": {"maximum": 2**70}}
    assert cache.tool(huge, "here", _read).parameters == {"read": "here"}
    assert len(cache) == 0


def test_the_cache_keeps_at_most_its_entries_dropping_the_least_recently_used():
    cache = DeclarationCache(max_entries=2)
    a, b, c = _declaration("a"), _declaration("b"), _declaration("c")
    tool_a = cache.tool(a, "0", _read)
    cache.tool(b, "1", _read)
    assert cache.tool(a, "2", _read) is tool_a  # a is now the most recent
    cache.tool(c, "3", _read)  # drops b
    assert len(cache) == 2
    assert cache.tool(a, "4", _read) is tool_a
    assert cache.tool(b, "5", _read).parameters == {"read": "5"}  # read again


def test_the_cache_keeps_at_most_its_bytes_and_skips_a_declaration_too_large():
    cache = DeclarationCache(max_entry_bytes=2_000, max_total_bytes=3_000)
    cache.tool(_declaration("big", 5_000), "0", _read)
    assert len(cache) == 0 and cache.total_bytes == 0
    for i in range(10):
        cache.tool(_declaration(f"t{i}", 1_000), str(i), _read)
        assert cache.total_bytes <= 3_000
    assert len(cache) == 2


def test_whatever_clients_send_the_shared_cache_stays_bounded():
    for i in range(1_200):
        request_from_wire(_body(_declaration(f"tool_{i}", 900)), "gemini-x")
    assert len(DECLARATIONS) <= DECLARATIONS.max_entries
    assert DECLARATIONS.total_bytes <= DECLARATIONS.max_total_bytes
