"""Responses the gateway keeps for groups that opt in: ``previous_response_id``
on channels that keep no conversation, and ``GET``/``DELETE /v1/responses/{id}``.

Settings (``plugins.toml``)::

    [plugins.openai.stored_responses]
    groups = ["team-a"]          # the groups whose Responses answers are kept (none by default)
    retention_seconds = 2592000  # how long a kept answer lives (30 days)
    max_per_user = 1000          # a user's newest answers kept; older ones are dropped
    max_bytes = 4194304          # the largest conversation kept with one answer (characters of JSON)

For a key of such a group, each successful Responses answer (``store`` not
``false``) is kept for the key's user:

- answered by a channel through the core model (anthropic, gemini, a chat-only
  openai channel): the answer as the client got it and the whole conversation it
  closes (the earlier turns, the request's input items, the answer's output
  items). A later request naming it in ``previous_response_id`` is sent with
  that conversation in front of its own input (and without the id), to any
  channel of its model; its answer still shows the id it continued.
- answered natively by an openai channel that speaks Responses: only which
  channel answered (the upstream holds the conversation). ``previous_response_id``
  naming it goes, as it came, to that channel only (no failover to one that does
  not hold it).

``GET`` answers a kept conversation's response; ``DELETE`` forgets it; for a
response an upstream holds, both are sent to the channel that answered it (its
404 is the client's; a deletion there forgets the gateway's row too). Both answer
404 for an id the user has no kept answer of (another user's included). A
conversation larger than ``max_bytes`` is not kept (noted in the log); expired
answers are dropped whenever another is kept. An id unknown here still goes to
the channels that speak Responses (the upstream may know it), else is a 400.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import attrs
import orjson
import structlog

from gateway_core import Call, Caller, InvalidRequestError, LocalAnswer, NotFoundError, StreamWriter, endpoints
from gateway_core.config import ConfigError
from gateway_core.kept_responses import StoredResponse

from .calls import RESPONSES_WIRE
from .channel_responses import STORED_METHOD
from .responses_request import stateful_reason

log = structlog.get_logger("relaygate.openai")

JSON = dict[str, Any]
PREVIOUS = "previous_response_id"
RESUMED = "resumed_from"  # call.options: the kept response a request continues
DAY = 86400


@attrs.frozen
class KeptResponses:
    """The ``[plugins.openai.stored_responses]`` settings."""

    groups: frozenset[str] = frozenset()
    retention_seconds: int = 30 * DAY
    max_per_user: int = 1000
    max_bytes: int = 4 * 1024 * 1024

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> KeptResponses:
        table = settings.get("stored_responses", {})
        if not isinstance(table, dict):
            raise ConfigError("[plugins.openai.stored_responses] must be a table")
        unknown = set(table) - {"groups", "retention_seconds", "max_per_user", "max_bytes"}
        if unknown:
            raise ConfigError(f"[plugins.openai.stored_responses] has unknown settings: {', '.join(sorted(unknown))}")
        groups = table.get("groups", [])
        if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
            raise ConfigError("[plugins.openai.stored_responses] groups must be a list of group names")
        defaults = cls()
        return cls(
            groups=frozenset(groups),
            retention_seconds=_positive(table, "retention_seconds", defaults.retention_seconds),
            max_per_user=_positive(table, "max_per_user", defaults.max_per_user),
            max_bytes=_positive(table, "max_bytes", defaults.max_bytes),
        )

    def keeps(self, group: str) -> bool:
        return group in self.groups

    # --- before routing ---------------------------------------------------------------

    async def prepare(self, call: Call, caller: Caller) -> Call | LocalAnswer:
        if call.endpoint == endpoints.RESPONSES_STORED:
            return await self._read_or_delete(call, caller)
        previous = call.body.get(PREVIOUS)
        if call.options.get("stateful") != PREVIOUS or not isinstance(previous, str) or not self.keeps(caller.key.group):
            return call
        kept = await caller.responses.get(previous, caller.key.user_id, time.time())
        if kept is None or kept.items is None:
            # unknown here (for the channels that speak Responses), or held by the channel that answered it
            channel_id = kept.channel_id if kept is not None else None
            return attrs.evolve(call, options={**call.options, "kept_groups": True}, channel_id=channel_id)
        items = orjson.loads(kept.items)
        body = {k: v for k, v in call.body.items() if k != PREVIOUS}
        body["input"] = items + input_items(call.body.get("input"))
        stateful = stateful_reason(body)
        endpoint = endpoints.RESPONSES if stateful else endpoints.CHAT
        options = {**call.options, "stateful": stateful, RESUMED: previous}
        return attrs.evolve(call, endpoint=endpoint, body=body, options=options)

    async def _read_or_delete(self, call: Call, caller: Caller) -> Call | LocalAnswer:
        response_id = str(call.body.get("id"))
        user = caller.key.user_id
        kept = await caller.responses.get(response_id, user, time.time())
        if kept is None:
            raise NotFoundError(
                f"Response with id '{response_id}' not found (this gateway keeps the responses of groups that opt in).",
                param="response_id",
            )
        if kept.items is None:  # held by the upstream that answered it: asked there
            options = {STORED_METHOD: call.body.get("method")}
            return attrs.evolve(
                call, endpoint=endpoints.RESPONSES, wire=RESPONSES_WIRE, model=kept.model, options=options, channel_id=kept.channel_id
            )
        if call.body.get("method") == "DELETE":
            await caller.responses.delete(response_id, user)
            return LocalAnswer(orjson.dumps({"id": response_id, "object": "response", "deleted": True}), estimated=False)
        return LocalAnswer(kept.response.encode(), estimated=False)

    # --- after the answer -------------------------------------------------------------

    async def keep(self, call: Call, caller: Caller, answer: bytes | StreamWriter, native: bool) -> None:
        method = call.options.get(STORED_METHOD)
        if method == "DELETE":  # deleted at the upstream that held it
            await caller.responses.delete(str(call.body.get("id")), caller.key.user_id)
        if method or call.endpoint not in (endpoints.CHAT, endpoints.RESPONSES) or call.body.get("store") is False:
            return
        if not self.keeps(caller.key.group) or caller.channel is None:
            return
        response = answer_object(answer)
        if response is None or not isinstance(response.get("id"), str) or response.get("status") not in ("completed", "incomplete"):
            return
        now = time.time()
        record = StoredResponse(
            id=response["id"], user_id=caller.key.user_id, key_id=caller.key.id, model=call.model,
            created_at=now, expires_at=now + self.retention_seconds, response="{}",
            channel_id=caller.channel.id,
        )  # fmt: skip
        if not native:
            output = [item for item in response.get("output") or () if isinstance(item, dict)]
            items = orjson.dumps(input_items(call.body.get("input")) + output).decode()
            text = orjson.dumps(response).decode()
            record = attrs.evolve(record, response=text, items=items, channel_id=None)
            if record.size > self.max_bytes:
                log.warning("responses.not_kept", response_id=record.id, size=record.size, max_bytes=self.max_bytes)
                return
        try:
            await caller.responses.save(record, self.max_per_user)
        except Exception as exc:  # the answer stands; only a later request naming it will miss it
            log.warning("responses.keep_failed", response_id=record.id, error=repr(exc))


def refusal(call: Call) -> InvalidRequestError | None:
    """The 400 of a ``previous_response_id`` neither kept here nor servable by a
    channel that speaks Responses (for groups that keep answers)."""
    if call.options.get("kept_groups") and call.options.get("stateful") == PREVIOUS:
        previous = call.body.get(PREVIOUS)
        return InvalidRequestError(f"Previous response with id '{previous}' not found.", param=PREVIOUS)
    return None


def input_items(value: Any) -> list[Any]:
    """A Responses ``input`` as a list of items (a string is one user message)."""
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value) if isinstance(value, list) else []


def answer_object(answer: bytes | StreamWriter) -> JSON | None:
    """The response object of a complete answer's body, or of a stream's writer."""
    if isinstance(answer, bytes):
        try:
            value = orjson.loads(answer)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    final = getattr(answer, "final_response", None)
    return final() if callable(final) else None


def shown_body(call: Call) -> JSON:
    """The body a converted answer echoes: with the ``previous_response_id`` it continued."""
    resumed = call.options.get(RESUMED)
    return {**call.body, PREVIOUS: resumed} if resumed else call.body


def _positive(table: Mapping[str, Any], name: str, default: int) -> int:
    value = table.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"[plugins.openai.stored_responses] {name} must be a positive integer, not {value!r}")
    return value
