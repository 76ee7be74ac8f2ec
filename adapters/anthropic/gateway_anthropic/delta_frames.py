"""Text delta frames read by their bytes.

Most frames of a Messages stream are ``content_block_delta`` frames of one text
block, byte for byte the same but for the text::

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"…"}}

The first such frame of a stream becomes its :class:`DeltaTemplate`: its bytes
before and after the text, proved once by parsing a probe text in the text's place
and finding the same payload with the probe as its text. A later frame that is the
template around a plain text (valid UTF-8 holding nothing JSON escapes: no quote,
backslash or control character) is then the same payload with that text, and gives
its text without being parsed. Any other frame (another block, an escape, a
signature, the usage) is parsed as before.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from gateway_core.sse import frame_fields

NOT_PLAIN = bytes(range(0x20)) + b'"\\'  # what a JSON string holds only escaped (or never)


@attrs.frozen
class DeltaTemplate:
    """A text delta frame's bytes before and after its text, and its block's index."""

    head: bytes
    tail: bytes
    index: int

    @classmethod
    def of(cls, raw: bytes, payload: dict[str, Any], text: str, index: int) -> DeltaTemplate | None:
        """The template of ``raw``, a ``text_delta`` frame whose parsed ``payload`` gave
        ``text`` for block ``index`` (the payload is the caller's, read already: its text
        is overwritten by the probe); ``None`` when it cannot be one."""
        encoded = text.encode()
        at = raw.find(b'"' + encoded + b'"')
        if at < 0 or not encoded or len(encoded.translate(None, NOT_PLAIN)) != len(encoded):
            return None
        template = cls(raw[: at + 1], raw[at + 1 + len(encoded) :], index)
        probe = "probe" if text != "probe" else "other"
        _, data = frame_fields(template.head + probe.encode() + template.tail)
        try:
            probed = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            return None
        delta["text"] = probe
        return template if probed == payload else None

    def text(self, raw: bytes) -> str | None:
        """The text of a frame that is this template around plain text, else ``None``."""
        head, tail = self.head, self.tail
        if len(raw) < len(head) + len(tail) or not raw.startswith(head) or not raw.endswith(tail):
            return None
        text = raw[len(head) : len(raw) - len(tail)]
        if len(text.translate(None, NOT_PLAIN)) != len(text):
            return None
        try:
            return text.decode()
        except UnicodeDecodeError:
            return None
