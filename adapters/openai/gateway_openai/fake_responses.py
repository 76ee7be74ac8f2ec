"""The fake OpenAI upstream's Responses API (see :mod:`.fake_upstream`): answers in
OpenAI's real shapes, echoing the last user input, or calling a function when
told to; streams the whole event sequence with usage at the end. A request with
``reasoning`` gets a reasoning item first, as a reasoning model answers: its summary
when ``reasoning.summary`` asks for one (streamed with the summary events), its
``encrypted_content`` when ``include`` names ``reasoning.encrypted_content``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

JSON = dict[str, Any]
RESPONSE_ID = "resp_fake123"
ENCRYPTED = "gAAAAABo-fake-encrypted-reasoning"
SUMMARY = "Thought about the answer."


def echo_input(body: JSON) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return f"echo: {items}"
    for item in reversed(items or []):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return f"echo: {content}"
    return "echo:"


def usage_of(body: JSON, text: str) -> JSON:
    prompt = len(str(body.get("input", ""))) // 4 + 3
    output = len(text.split())
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 1},
        "total_tokens": prompt + output,
    }


def response_object(body: JSON, status: str, output: list[JSON], usage: JSON | None) -> JSON:
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "store": body.get("store", True),
        "usage": usage,
        "upstream_only_field": {"kept": True},
    }


def output_items(text: str, tool_call: JSON | None) -> list[JSON]:
    if tool_call is not None:
        return [{"id": "fc_fake1", "type": "function_call", "status": "completed", "call_id": tool_call["id"],
                 "name": tool_call["function"]["name"], "arguments": tool_call["function"]["arguments"]}]  # fmt: skip
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return [{"id": "msg_fake1", "type": "message", "role": "assistant", "status": "completed", "content": content}]


def reasoning_items(body: JSON) -> list[JSON]:
    reasoning = body.get("reasoning")
    if not isinstance(reasoning, dict):
        return []
    item: JSON = {"id": "rs_fake1", "type": "reasoning", "summary": [{"type": "summary_text", "text": SUMMARY}] if reasoning.get("summary") else []}
    if "reasoning.encrypted_content" in (body.get("include") or []):
        item["encrypted_content"] = ENCRYPTED
    return [item]


def complete(body: JSON, tool_call: JSON | None) -> JSON:
    text = echo_input(body)
    return response_object(body, "completed", reasoning_items(body) + output_items(text, tool_call), usage_of(body, text))


def events(body: JSON, tool_call: JSON | None, extra: list[JSON] | None = None) -> Iterator[JSON]:
    """The stream's events, ``sequence_number`` included (``extra``: events of other
    types, sent after ``response.in_progress``)."""
    text = echo_input(body)
    lead = reasoning_items(body)
    items = output_items(text, tool_call)
    item = items[0]
    seq = iter(range(10_000))

    def event(kind: str, **fields: Any) -> JSON:
        return {"type": kind, "sequence_number": next(seq), **fields}

    index = len(lead)
    at = {"item_id": item["id"], "output_index": index}
    yield event("response.created", response=response_object(body, "in_progress", [], None))
    yield event("response.in_progress", response=response_object(body, "in_progress", [], None))
    for other in extra or []:
        yield {**other, "sequence_number": next(seq)}
    for reasoning in lead:
        yield event("response.output_item.added", output_index=0, item={**reasoning, "summary": []})
        if reasoning["summary"]:
            where = {"item_id": reasoning["id"], "output_index": 0, "summary_index": 0}
            yield event("response.reasoning_summary_part.added", **where, part={"type": "summary_text", "text": ""})
            yield event("response.reasoning_summary_text.delta", **where, delta=SUMMARY)
            yield event("response.reasoning_summary_text.done", **where, text=SUMMARY)
            yield event("response.reasoning_summary_part.done", **where, part=reasoning["summary"][0])
        yield event("response.output_item.done", output_index=0, item=reasoning)
    if tool_call is not None:
        yield event("response.output_item.added", output_index=index, item={**item, "arguments": "", "status": "in_progress"})
        arguments = item["arguments"]
        for start in range(0, len(arguments), 5):
            yield event("response.function_call_arguments.delta", **at, delta=arguments[start : start + 5])
        yield event("response.function_call_arguments.done", **at, name=item["name"], arguments=arguments)
    else:
        yield event("response.output_item.added", output_index=index, item={**item, "content": [], "status": "in_progress"})
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield event("response.content_part.added", **at, content_index=0, part=empty)
        for n, word in enumerate(text.split(" ")):
            yield event("response.output_text.delta", **at, content_index=0, delta=word if n == 0 else " " + word, logprobs=[])
        yield event("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
        yield event("response.content_part.done", **at, content_index=0, part=item["content"][0])
    yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response_object(body, "completed", lead + items, usage_of(body, text)))
