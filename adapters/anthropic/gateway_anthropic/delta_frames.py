"""Text delta frames read by their bytes.

Most frames of a Messages stream are ``content_block_delta`` frames of one text
block, byte for byte the same but for the text::

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"…"}}

The first such frame of a stream becomes its template
(:class:`gateway_core.sse.TextTemplate`), proved here by parsing a probe text in
the text's place. A later frame that is the template around plain text then gives
its text without being parsed; any other frame (another block, an escape, a
signature, the usage) is parsed as before.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core.sse import TextTemplate, frame_fields


def delta_template(raw: bytes, payload: dict[str, Any], text: str, index: int) -> TextTemplate | None:
    """The template of ``raw``, a ``text_delta`` frame whose parsed ``payload`` gave
    ``text`` for block ``index`` (the payload is the caller's, read already: its text
    is overwritten by the probe); ``None`` when it cannot be one."""
    found = TextTemplate.candidate(raw, text, index)
    delta = payload.get("delta")
    if found is None or not isinstance(delta, dict):
        return None
    template, probe, frame = found
    try:
        probed = orjson.loads(frame_fields(frame)[1])
    except orjson.JSONDecodeError:
        return None
    delta["text"] = probe
    return template if probed == payload else None
