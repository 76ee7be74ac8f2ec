"""Counting a request's input tokens locally, for ``count_tokens`` on channels that cannot count.

An anthropic channel counts with the upstream's own ``count_tokens``. Any other
channel serves models whose tokenizer the gateway may not have (Claude's is not
public), so the gateway counts with a real BPE tokenizer and says the result is an
estimate:

- The text of every part is tokenized with tiktoken's ``o200k_base`` encoding
  (GPT-4o and later, and the fallback for unknown model names) or ``cl100k_base``
  (GPT-4, GPT-3.5), whichever tiktoken names for the model. Their BPE files ship
  gzip-compressed in ``gateway_anthropic/encodings`` and are checked against tiktoken's
  published SHA-256 when loaded: nothing is downloaded at run time.
- What a chat template adds around the text is estimated: 3 tokens per message and
  3 for the answer's priming (OpenAI's published rule for its chat models), a tool
  call as its name and arguments plus 3, a tool definition as its JSON text, and an
  image as a flat 765 tokens (a 1024×1024 image at high detail on OpenAI models).
- Blocks the core has no part for (documents, search results …) count their text
  fields; their base64 payloads count as an image each.

The count is exact for plain text on OpenAI models and an estimate otherwise.
Loading an encoding takes a few tenths of a second once per process; callers run
:func:`count_input_tokens` in a thread.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
from importlib import resources
from typing import Any

import attrs
import orjson
import tiktoken
import tiktoken.model

from gateway_core.model import ChatRequest, ImagePart, Part, ReasoningPart, TextPart, Tool, ToolCallPart, ToolResultPart

MESSAGE_TOKENS = 3
PRIMING_TOKENS = 3
IMAGE_TOKENS = 765
DEFAULT_ENCODING = "o200k_base"

_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""


@attrs.frozen
class EncodingSpec:
    pattern: str
    special_tokens: dict[str, int]
    sha256: str


SPECS: dict[str, EncodingSpec] = {
    "o200k_base": EncodingSpec(
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": EncodingSpec(
        _CL100K_PATTERN,
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}

_loaded: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


@attrs.frozen
class TokenCount:
    input_tokens: int
    encoding: str
    exact: bool = False  # framing is estimated: never exact for a whole request


def encoding_name_for(model: str) -> str:
    """The shipped encoding tiktoken names for ``model`` (``o200k_base`` for unknown models)."""
    try:
        name = tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        return DEFAULT_ENCODING
    return name if name in SPECS else DEFAULT_ENCODING


def get_encoding(name: str) -> tiktoken.Encoding:
    """A shipped encoding, loaded once per process from the package data."""
    encoding = _loaded.get(name)
    if encoding is None:
        with _lock:
            encoding = _loaded.get(name)
            if encoding is None:
                encoding = _loaded[name] = _load(name)
    return encoding


def _load(name: str) -> tiktoken.Encoding:
    spec = SPECS[name]
    packed = resources.files("gateway_anthropic").joinpath("encodings").joinpath(f"{name}.tiktoken.gz").read_bytes()
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise RuntimeError(f"the shipped {name} encoding file is damaged (SHA-256 mismatch)")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(name=name, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens=spec.special_tokens)


def count_input_tokens(request: ChatRequest) -> TokenCount:
    """The input tokens of ``request`` as counted locally (see the module docstring)."""
    name = encoding_name_for(request.model)
    counter = _Counter(get_encoding(name))
    total = PRIMING_TOKENS
    if request.system:
        total += MESSAGE_TOKENS + sum(map(counter.part, request.system))
    for message in request.messages:
        total += MESSAGE_TOKENS + sum(map(counter.part, message.parts))
    total += sum(map(counter.tool, request.tools))
    server_tools = request.extra.get("anthropic_server_tools")
    if isinstance(server_tools, list):  # definitions Anthropic's own tools add
        total += counter.text(orjson.dumps(server_tools).decode())
    return TokenCount(total, name)


class _Counter:
    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding

    def text(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text)) if text else 0

    def part(self, part: Part) -> int:
        if isinstance(part, TextPart):
            block = (part.provider_metadata or {}).get("anthropic_block")
            return self.text(part.text) + (self.opaque(block) if block is not None else 0)
        if isinstance(part, ReasoningPart):
            return self.text(part.text)
        if isinstance(part, ImagePart):
            return IMAGE_TOKENS
        if isinstance(part, ToolCallPart):
            return MESSAGE_TOKENS + self.text(part.name) + self.text(part.arguments)
        if isinstance(part, ToolResultPart):
            return MESSAGE_TOKENS + sum(map(self.part, part.content))
        return 0

    def tool(self, tool: Tool) -> int:
        definition = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        return self.text(orjson.dumps(definition).decode())

    def opaque(self, value: Any) -> int:
        """The text fields of a block the core has no part for; base64 payloads as images."""
        if isinstance(value, dict):
            total = 0
            for key, item in value.items():
                if key == "data" and isinstance(item, str) and value.get("type") == "base64":
                    total += IMAGE_TOKENS
                elif key not in ("type", "cache_control", "media_type"):
                    total += self.opaque(item)
            return total
        if isinstance(value, list):
            return sum(map(self.opaque, value))
        return self.text(value) if isinstance(value, str) else 0
