"""The demo channel's answers: deterministic text derived from the request."""

from __future__ import annotations

from gateway_core import ChatRequest, Role, StopReason, TextPart, Usage
from gateway_core.tally import estimate_tokens

GREETING = "Hello from the Relaygate demo channel."


def last_user_text(request: ChatRequest) -> str:
    for message in reversed(request.messages):
        if message.role is Role.USER:
            return " ".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
    return ""


def answer(request: ChatRequest) -> tuple[list[str], StopReason]:
    """The answer as the pieces a stream sends one by one, and why it stopped.

    Each piece is a word with its leading space; ``max_tokens`` (one word
    counting as one token) cuts the answer short.
    """
    said = last_user_text(request)
    text = f"{GREETING} You said: {said}" if said else f"{GREETING} Send a user message and it is echoed back."
    words = text.split(" ")
    pieces = [words[0]] + [" " + w for w in words[1:]]
    if request.max_tokens is not None and len(pieces) > request.max_tokens:
        return pieces[: max(request.max_tokens, 0)], StopReason.MAX_TOKENS
    return pieces, StopReason.END_TURN


def usage_for(request: ChatRequest, output: str) -> Usage:
    def chars(parts) -> int:
        return sum(len(p.text) for p in parts if isinstance(p, TextPart))

    prompt = chars(request.system) + sum(chars(m.parts) for m in request.messages)
    return Usage(input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(len(output)))
