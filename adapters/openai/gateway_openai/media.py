"""Images and audio: what the gateway reads from their bodies to bill them (pure).

- Images are billed per image returned (``len(data)``) at the most specific price
  set among ``model:size:quality``, ``model:size`` and ``model`` (the request's
  own ``size``/``quality``), plus the tokens the upstream reports (``gpt-image-*``
  answers carry ``usage``).
- An image request reserves, per image asked for, the output tokens its size and
  quality are billed (:func:`image_output_tokens`: OpenAI's table for
  ``gpt-image-*``; none for ``dall-e-*``, billed per image only; the gateway's
  default cap for other models), not a cap meant for text, and 100 more for each
  partial image a stream asks for (``partial_images``: OpenAI bills each so).
- Speech is billed per character of ``input``.
- A transcription is billed by what the upstream reports: the tokens of its
  ``usage`` (``type: "tokens"``), else the seconds of its ``usage``
  (``type: "duration"``) or of ``verbose_json``'s ``duration``, else the end of the
  last cue of an ``srt``/``vtt`` answer; a plain ``text`` answer says nothing, so
  its length is estimated from the upload's size at :data:`AUDIO_BYTES_PER_SECOND`
  (and the usage row marked estimated).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from gateway_core.model import MediaUsage, Usage

JSON = dict[str, Any]

# 128 kbit/s: a typical compressed recording (MP3, M4A). Uncompressed 16 kHz
# 16-bit mono WAV is twice that, so its length is over-estimated twofold.
AUDIO_BYTES_PER_SECOND = 16_000
SPEECH_CONTENT_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/opus",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
_TIMESTAMP = re.compile(rb"(\d{1,2}):(\d{2}):(\d{2})[,.](\d{3})")


def image_price_variants(model: str, size: str | None, quality: str | None) -> tuple[str, ...]:
    """Price names more specific than ``model`` for an image request, most specific first."""
    out: list[str] = []
    if size and quality:
        out.append(f"{model}:{size}:{quality}")
    if size:
        out.append(f"{model}:{size}")
    return tuple(out)


# output tokens one image is billed, for gpt-image models: quality -> size -> tokens
IMAGE_OUTPUT_TOKENS = {
    "low": {"1024x1024": 272, "1024x1536": 408, "1536x1024": 400},
    "medium": {"1024x1024": 1056, "1024x1536": 1584, "1536x1024": 1568},
    "high": {"1024x1024": 4160, "1024x1536": 6240, "1536x1024": 6208},
}
PARTIAL_IMAGE_OUTPUT_TOKENS = 100  # each partial image of a stream, on top of the image's own
MAX_PARTIAL_IMAGES = 3
TOKEN_BILLED_IMAGES = "gpt-image"
IMAGE_PRICED_IMAGES = "dall-e"


def image_output_tokens(model: str, size: str | None, quality: str | None, partial_images: int = 0) -> int | None:
    """The most output tokens one image of ``model`` at ``size`` and ``quality`` is
    billed: from the table for token-billed models (``auto`` or another quality: the
    highest; ``auto`` or another size: the largest) plus
    :data:`PARTIAL_IMAGE_OUTPUT_TOKENS` per partial image streamed, 0 for models
    billed per image only, ``None`` (the gateway's default cap) for models this does
    not know."""
    name = model.lower()
    if name.startswith(IMAGE_PRICED_IMAGES):
        return 0
    if not name.startswith(TOKEN_BILLED_IMAGES):
        return None
    by_size = IMAGE_OUTPUT_TOKENS.get(quality or "", IMAGE_OUTPUT_TOKENS["high"])
    return by_size.get(size or "", max(by_size.values())) + PARTIAL_IMAGE_OUTPUT_TOKENS * partial_images


def speech_content_type(response_format: str) -> str:
    return SPEECH_CONTENT_TYPES.get(response_format, "application/octet-stream")


def estimated_audio_ms(size_bytes: int) -> int:
    """The length of a recording of ``size_bytes``, guessed from a typical bitrate."""
    return max(0, size_bytes) * 1000 // AUDIO_BYTES_PER_SECOND


def images_used(answer: JSON) -> tuple[MediaUsage, Usage | None]:
    """The images an images answer returned, and the tokens it reports (if any)."""
    data = answer.get("data")
    images = len(data) if isinstance(data, list) else 0
    return MediaUsage(images=images), image_tokens(answer.get("usage"))


def image_tokens(usage: Any) -> Usage | None:
    """The tokens an images answer's (or completed stream event's) ``usage`` reports."""
    if not isinstance(usage, dict):
        return None
    return Usage(input_tokens=_int(usage.get("input_tokens")), output_tokens=_int(usage.get("output_tokens")))


def transcription_used(body: bytes, content_type: str, upload_size: int) -> tuple[MediaUsage, Usage]:
    """What a transcription answer says it used (see the module's docstring)."""
    if content_type.startswith("application/json"):
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError:
            answer = None
        if isinstance(answer, dict):
            reported = transcription_usage(answer.get("usage"))
            if reported is not None:
                return reported
            duration = answer.get("duration")
            if isinstance(duration, (int, float)) and not isinstance(duration, bool):
                return MediaUsage(audio_ms=round(duration * 1000)), Usage()
    else:
        cue_end = last_cue_ms(body)
        if cue_end is not None:
            return MediaUsage(audio_ms=cue_end), Usage()
    return MediaUsage(audio_ms=estimated_audio_ms(upload_size), estimated=True), Usage()


def transcription_usage(usage: Any) -> tuple[MediaUsage, Usage] | None:
    """A transcription's ``usage`` object: tokens, or seconds of audio."""
    if not isinstance(usage, dict):
        return None
    if usage.get("type") == "duration" and isinstance(usage.get("seconds"), (int, float)):
        return MediaUsage(audio_ms=round(usage["seconds"] * 1000)), Usage()
    if "input_tokens" in usage or "output_tokens" in usage:
        return MediaUsage(), Usage(input_tokens=_int(usage.get("input_tokens")), output_tokens=_int(usage.get("output_tokens")))
    return None


def last_cue_ms(body: bytes) -> int | None:
    """The latest timestamp of an SRT or WebVTT document, in milliseconds."""
    latest = None
    for h, m, s, ms in _TIMESTAMP.findall(body):
        value = ((int(h) * 60 + int(m)) * 60 + int(s)) * 1000 + int(ms)
        latest = value if latest is None or value > latest else latest
    return latest


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
