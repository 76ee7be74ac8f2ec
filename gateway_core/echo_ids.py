"""Opaque data carried inside a tool-call id, for clients that echo ids verbatim.

A channel type whose upstream needs data back with a replayed tool call (a
signature of the model's turn) that the client's protocol has no field for folds
it into the call's id: :func:`fold_id` appends :data:`SEPARATOR` and the token in
unpadded base64url, so the id keeps to ``[A-Za-z0-9_-]`` when it did (the
strictest rule a client protocol sets on tool-call ids). :func:`split_id` takes it
apart again; an id without a well-formed token is returned unchanged.

The relay splits the ids of every converted request (:func:`split_ids`): calls
and results reach every channel with their plain ids (an upstream's length
limit and character rules hold), and each call's token rides in its
``provider_metadata`` under :data:`ECHO` for the channel that folded it. Adapters
whose same-protocol path forwards the client's body split the ids there
themselves.
"""

from __future__ import annotations

import base64
import binascii

import attrs

from .model import ChatRequest, Message, Part, ToolCallPart, ToolResultPart

SEPARATOR = "__rg-"  # between the id and the token: in the strictest id alphabet, unlike any id an upstream writes
ECHO = "echo"  # the provider_metadata key of a call's token once split off


def fold_id(call_id: str, token: str | None) -> str:
    """``call_id`` carrying ``token`` (unchanged without a token, or when the id
    already holds the separator and could not be split back)."""
    if not token or SEPARATOR in call_id:
        return call_id
    return call_id + SEPARATOR + _encode(token)


def split_id(call_id: str) -> tuple[str, str | None]:
    """The plain id and the token :func:`fold_id` put into ``call_id`` (``None``: none)."""
    plain, found, payload = call_id.partition(SEPARATOR)
    if not found or not payload:
        return call_id, None
    try:
        token = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    except (binascii.Error, ValueError):
        return call_id, None
    if _encode(token) != payload:  # not written by fold_id
        return call_id, None
    return plain, token


def plain_id(call_id: str) -> str:
    """``call_id`` without a folded token."""
    return split_id(call_id)[0] if SEPARATOR in call_id else call_id


def split_ids(request: ChatRequest) -> ChatRequest:
    """``request`` with every tool call's and result's id split (the call's token
    in its ``provider_metadata[ECHO]``); the same object when no id holds a token."""
    if not any(_folded(part) for message in request.messages for part in message.parts):
        return request
    messages = tuple(Message(m.role, tuple(_split(p) for p in m.parts), m.name) for m in request.messages)
    return attrs.evolve(request, messages=messages)


def _folded(part: Part) -> bool:
    if isinstance(part, ToolCallPart):
        return SEPARATOR in part.id
    return isinstance(part, ToolResultPart) and SEPARATOR in part.tool_call_id


def _split(part: Part) -> Part:
    if isinstance(part, ToolCallPart) and SEPARATOR in part.id:
        plain, token = split_id(part.id)
        if token is None:
            return part
        return attrs.evolve(part, id=plain, provider_metadata={**(part.provider_metadata or {}), ECHO: token})
    if isinstance(part, ToolResultPart) and SEPARATOR in part.tool_call_id:
        return attrs.evolve(part, tool_call_id=plain_id(part.tool_call_id))
    return part


def _encode(token: str) -> str:
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
