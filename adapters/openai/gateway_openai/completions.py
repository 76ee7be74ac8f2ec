"""Legacy text completions (``POST /v1/completions``): the call, and what the
gateway reads from the answers to bill them (pure, no I/O).

Only ``openai`` channels serve them, on the fast path: the body goes as it came
with the model mapped (and, for a stream, ``stream_options.include_usage``, so
that the usage can be billed; the usage-only chunk is dropped again when the
client did not ask for it). A ``text_completion`` object has the same shape
streamed and not: each chunk's ``choices[].text`` is read as a chat delta
(:func:`as_chat_chunk`), so the core events come from the chat decoder.

Billing: the ``usage`` the upstream reports (``prompt_tokens``,
``completion_tokens``); without it, the texts returned are counted. The output
cap reserved is ``max_tokens`` once per completion asked for (the prompts times
``n`` or ``best_of``, the larger).
"""

from __future__ import annotations

from typing import Any

from gateway_core import Call, InvalidRequestError, RouteSpec, capped_output
from gateway_core.model import ChatResponse, TextPart

from .calls import PROTOCOL, required_model, stream_flag

COMPLETIONS_WIRE = "openai.completions"
JSON = dict[str, Any]


def completions_call(route: RouteSpec, data: JSON) -> Call:
    """A completions body as a call; 400 when its model, prompt or counts are not usable."""
    model, stream = required_model(data), stream_flag(data)
    prompts = prompt_count(data.get("prompt"))
    copies = prompts * max(_count(data, "n"), _count(data, "best_of"))
    options = {}
    if stream:
        stream_options = data.get("stream_options")
        options["include_usage"] = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    cap = data.get("max_tokens")
    billing = capped_output(cap * copies if type(cap) is int else None)
    return Call(PROTOCOL, route.endpoint, COMPLETIONS_WIRE, model, stream, data, options, billing=billing)


def prompt_count(prompt: Any) -> int:
    """How many prompts ``prompt`` holds: a string, or a non-empty array of strings,
    of token ids (one prompt) or of token-id arrays; 400 otherwise."""
    if isinstance(prompt, str):
        return 1
    if isinstance(prompt, list) and prompt:
        if all(isinstance(p, str) for p in prompt):
            return len(prompt)
        if all(type(t) is int for t in prompt):
            return 1
        if all(isinstance(p, list) and p and all(type(t) is int for t in p) for p in prompt):
            return len(prompt)
    raise InvalidRequestError(
        "The request needs a 'prompt': a string, an array of strings, an array of token ids or an array of token-id arrays.",
        param="prompt",
    )


def _count(data: JSON, name: str) -> int:
    value = data.get(name)
    if value is None:
        return 1
    if type(value) is not int or value < 1:
        raise InvalidRequestError(f"'{name}' must be a positive integer.", param=name)
    return value


def as_chat_chunk(chunk: JSON) -> JSON:
    """A ``text_completion`` object read as a ``chat.completion.chunk`` (the texts as
    content deltas), for the chat decoder."""
    choices = chunk.get("choices")
    return {
        "id": chunk.get("id"),
        "created": chunk.get("created"),
        "model": chunk.get("model"),
        "choices": [
            {"index": c.get("index", 0), "delta": {"content": c.get("text")}, "finish_reason": c.get("finish_reason")}
            for c in (choices if isinstance(choices, list) else ())
            if isinstance(c, dict)
        ],
        "usage": chunk.get("usage"),
    }


def answer_texts(answer: JSON) -> ChatResponse:
    """A completion answer's texts as a core response: what is counted when the
    upstream reported no usage."""
    choices = answer.get("choices")
    texts = [c.get("text") for c in (choices if isinstance(choices, list) else ()) if isinstance(c, dict)]
    text = "".join(t for t in texts if isinstance(t, str))
    return ChatResponse(id=str(answer.get("id") or ""), model=str(answer.get("model") or ""), parts=(TextPart(text),), stop_reason=None)


