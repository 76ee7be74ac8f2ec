"""The normalized model every adapter translates to and from.

Plain attrs values with no wire names, frozen but for the stream events (see
there). A client-protocol adapter converts its wire format to these types and
back; a channel-type adapter does the same for its upstream. Fields a side cannot interpret travel in ``extra`` (requests) or
``provider_metadata`` (parts and events) so that a round trip loses nothing.
"""

from __future__ import annotations

import enum
from typing import Any, Union

import attrs

JSON = dict[str, Any]


# --- content parts -----------------------------------------------------------


@attrs.frozen
class TextPart:
    text: str
    provider_metadata: JSON | None = None


@attrs.frozen
class ImagePart:
    """An image given by URL or inline base64 ``data`` with its ``media_type``."""

    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    detail: str | None = None
    provider_metadata: JSON | None = None


@attrs.frozen
class ToolCallPart:
    """A model's call of a tool; ``arguments`` is the JSON text as produced."""

    id: str
    name: str
    arguments: str = ""
    provider_metadata: JSON | None = None


@attrs.frozen
class ToolResultPart:
    """The result of a tool call, matched to it by ``tool_call_id``."""

    tool_call_id: str
    content: tuple[Part, ...] = ()
    is_error: bool = False
    name: str | None = None
    provider_metadata: JSON | None = None


@attrs.frozen
class ReasoningPart:
    """Reasoning ("thinking") text; signatures live in ``provider_metadata``."""

    text: str
    provider_metadata: JSON | None = None


Part = Union[TextPart, ImagePart, ToolCallPart, ToolResultPart, ReasoningPart]


class Role(str, enum.Enum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@attrs.frozen
class Message:
    role: Role
    parts: tuple[Part, ...]
    name: str | None = None


# --- requests ----------------------------------------------------------------


@attrs.frozen
class Tool:
    name: str
    description: str | None = None
    parameters: JSON | None = None
    extra: JSON = attrs.field(factory=dict)


class ToolChoiceMode(str, enum.Enum):
    AUTO = "auto"
    NONE = "none"
    REQUIRED = "required"  # any tool
    TOOL = "tool"  # the named tool


@attrs.frozen
class ToolChoice:
    mode: ToolChoiceMode
    name: str | None = None


@attrs.frozen
class ChatRequest:
    """A chat/messages/generateContent request in protocol-neutral form.

    ``system`` holds the system prompt parts (protocols that put system text in
    messages move it here). ``extra`` keeps the top-level fields the reading
    protocol did not interpret, keyed by their wire names.
    """

    model: str
    messages: tuple[Message, ...]
    system: tuple[Part, ...] = ()
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool = False
    user: str | None = None
    extra: JSON = attrs.field(factory=dict)


# --- responses ---------------------------------------------------------------


class StopReason(str, enum.Enum):
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    TOOL_USE = "tool_use"
    STOP_SEQUENCE = "stop_sequence"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"


@attrs.frozen
class Usage:
    """Tokens of one answer, counted one way whatever the protocol.

    ``input_tokens`` counts every input token, the cached ones
    (``cached_input_tokens``: read from a prompt cache) and the ones written to a
    cache (``cache_write_tokens``) included; the uncached rest is
    ``input_tokens - cached_input_tokens - cache_write_tokens``.
    ``output_tokens`` counts every output token, reasoning included
    (``reasoning_tokens`` is the part of them spent reasoning). Adapters whose
    wire counts cached tokens apart add them in when reading and
    take them out when writing.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_1h_tokens: int = 0  # of cache_write_tokens, those written for an hour (not five minutes)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        return max(0, self.input_tokens - self.cached_input_tokens - self.cache_write_tokens)


@attrs.frozen
class ChatResponse:
    id: str
    model: str
    parts: tuple[Part, ...]
    stop_reason: StopReason | None
    usage: Usage | None = None
    created: int | None = None
    provider_metadata: JSON | None = None


@attrs.frozen
class ModelInfo:
    """One model a key may use, as listed by ``GET /v1/models`` and friends."""

    id: str
    owned_by: str = "relaygate"
    created: int = 0
    # from the model catalogue when it knows the model (gateway_core/billing/catalogue.json)
    input_token_limit: int | None = None
    output_token_limit: int | None = None


# --- stream events -----------------------------------------------------------
#
# A stream is: StreamStart, then for each part PartStart / PartDelta* / PartStop
# (parts may interleave, told apart by ``index``), then StreamFinish, with
# UsageReport wherever the upstream reports usage (usually last). An upstream that
# counts the input before the answer ends (in a stream's first event, or on early
# chunks) may say so with InputReport, so a stream cut short
# is charged the real input instead of an estimate.
#
# Events are made for every upstream chunk, so they are slotted attrs classes
# without the frozen guard (a frozen attrs instance costs about three times as
# much to make): they compare by value like the other classes here, but are not
# hashable, and nothing may change one once it is made.

@attrs.define
class StreamStart:
    id: str
    model: str
    created: int | None = None


@attrs.define
class PartStart:
    """A new part begins at ``index``; ``part`` carries its kind and identity
    (a ``ToolCallPart`` with id and name, an empty ``TextPart`` ...)."""

    index: int
    part: Part


@attrs.define
class PartDelta:
    """Text appended to the part at ``index``: text, reasoning or tool-call arguments."""

    index: int
    text: str
    provider_metadata: JSON | None = None


@attrs.define
class PartStop:
    index: int
    provider_metadata: JSON | None = None


@attrs.define
class StreamFinish:
    stop_reason: StopReason | None


@attrs.define
class UsageReport:
    usage: Usage


@attrs.define
class InputReport:
    """The upstream's count of the input (``usage``'s input, cached and cache-write
    tokens; its output counts are ignored), reported before the answer finished.
    Billing uses it when the stream ends without a :class:`UsageReport`; client
    writers ignore it."""

    usage: Usage


StreamEvent = Union[StreamStart, PartStart, PartDelta, PartStop, StreamFinish, UsageReport, InputReport]


# --- embeddings ----------------------------------------------------------------


@attrs.frozen
class EmbeddingsRequest:
    """Texts to embed, in protocol-neutral form (for channels of another wire).

    ``inputs`` are the texts in order; ``dimensions`` asks for shorter vectors where
    the model can; ``extra`` keeps the reading protocol's other fields by wire name.
    Token arrays (pre-tokenized input some wires accept) have no neutral form: they stay on
    their own wire's fast path.
    """

    model: str
    inputs: tuple[str, ...]
    dimensions: int | None = None
    user: str | None = None
    extra: JSON = attrs.field(factory=dict)


@attrs.frozen
class EmbeddingsResponse:
    """One vector per input, in the order of ``EmbeddingsRequest.inputs``."""

    model: str
    vectors: tuple[tuple[float, ...], ...]
    usage: Usage | None = None


CoreRequest = Union[ChatRequest, EmbeddingsRequest]
CoreResponse = Union[ChatResponse, EmbeddingsResponse]


# --- calls priced by something other than tokens --------------------------------


@attrs.frozen
class MediaUsage:
    """What a call used that is priced per unit rather than per token: images made,
    characters spoken (speech), milliseconds of audio heard (transcription).

    ``estimated`` says a quantity was computed locally (a transcription's length
    guessed from its file size) rather than reported by the upstream.
    """

    images: int = 0
    characters: int = 0
    audio_ms: int = 0
    estimated: bool = False
