"""The fake OpenAI upstream's embeddings, images and audio (see :mod:`.fake_upstream`).

Streamed images (``stream: true``) come as OpenAI sends them: per image,
``partial_images`` partial-image events, then a completed event with the image's
``usage`` (its output tokens 272 and 100 per partial image); the completed events
wait for ``hold`` (an :class:`asyncio.Event`) when one is given, so a test can
see the partial images reach the client before the upstream finishes.

Multipart uploads are read part by part and recorded as what arrived: each text
field's value, each file's field name, file name, content type, size and SHA-256
(the bytes themselves are not kept).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import struct
import time
from typing import Any

import orjson
from aiohttp import web

from gateway_core.testing import Fault

JSON = dict[str, Any]
SPEECH_TYPES = {"mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac", "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/pcm"}
PNG_1PX = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)).decode()  # fmt: skip
TRANSCRIPT = "hello from the fake upstream"
AUDIO_SECONDS = 12.5


async def read_form(request: web.Request) -> JSON:
    """The fields and files of a multipart request."""
    fields: dict[str, Any] = {}
    files: list[JSON] = []
    reader = await request.multipart()
    while True:
        part = await reader.next()
        if part is None:
            break
        data = await part.read()  # type: ignore[union-attr]
        if part.filename:  # type: ignore[union-attr]
            files.append({
                "field": part.name, "filename": part.filename,  # type: ignore[union-attr]
                "content_type": part.headers.get("Content-Type"), "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            })  # fmt: skip
        else:
            fields[str(part.name)] = data.decode()  # type: ignore[union-attr]
    return {"fields": fields, "files": files}


def embeddings(body: JSON) -> JSON:
    items = body.get("input")
    items = [items] if isinstance(items, str) or (isinstance(items, list) and items and type(items[0]) is int) else items
    size = int(body.get("dimensions") or 8)
    data = []
    for n, item in enumerate(items or []):
        vector = [round((len(str(item)) + i) / 100.0, 4) for i in range(size)]
        encoded: Any = base64.b64encode(struct.pack(f"<{size}f", *vector)).decode() if body.get("encoding_format") == "base64" else vector
        data.append({"object": "embedding", "index": n, "embedding": encoded})
    tokens = sum(len(str(i)) // 4 + 1 for i in items or [])
    return {"object": "list", "data": data, "model": body.get("model"), "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def images(model: str, n: int, response_format: str | None) -> JSON:
    if response_format == "url":
        data = [{"url": f"https://images.example/fake-{i}.png", "revised_prompt": "a fake"} for i in range(n)]
    else:
        data = [{"b64_json": PNG_1PX} for _ in range(n)]
    answer: JSON = {"created": int(time.time()), "data": data}
    if model.startswith("gpt-image"):
        answer["usage"] = {"input_tokens": 12, "input_tokens_details": {"text_tokens": 12, "image_tokens": 0},
                           "output_tokens": 272 * n, "total_tokens": 12 + 272 * n}  # fmt: skip
    return answer


def image_events(prefix: str, body: JSON, partial_image_bytes: int) -> tuple[list[JSON], list[JSON]]:
    """The partial-image events and the completed events of a streamed images answer
    (``prefix``: ``image_generation`` or ``image_edit``); a partial image is
    ``partial_image_bytes`` long (0: the 1-pixel PNG)."""
    n, partials = int(body.get("n") or 1), int(body.get("partial_images") or 0)
    shape = {"background": "opaque", "output_format": "png", "quality": body.get("quality") or "low",
             "size": body.get("size") or "1024x1024", "created_at": int(time.time())}  # fmt: skip
    partial_image = base64.b64encode(bytes(range(256)) * (partial_image_bytes // 256)).decode() if partial_image_bytes else PNG_1PX
    partial_events, completed = [], []
    for _ in range(n):
        for index in range(partials):
            partial_events.append({"type": f"{prefix}.partial_image", "b64_json": partial_image, "partial_image_index": index, **shape})
        output = 272 + 100 * partials
        usage = {"input_tokens": 12, "input_tokens_details": {"text_tokens": 12, "image_tokens": 0},
                 "output_tokens": output, "total_tokens": 12 + output}  # fmt: skip
        completed.append({"type": f"{prefix}.completed", "b64_json": PNG_1PX, **shape, "usage": usage})
    return partial_events, completed


async def image_stream(
    request: web.Request, events: tuple[list[JSON], list[JSON]], hold: asyncio.Event | None, fault: Fault
) -> web.StreamResponse:
    """Write the partial images, then (once ``hold`` is set) the completed events,
    playing ``fault``'s ``drop_after`` (the connection closed) and ``error_after``
    (OpenAI's ``error`` event, then the end) after that many events."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    partials, completed = events
    for n, event in enumerate([*partials, *completed]):
        if n == len(partials) and hold is not None:
            await hold.wait()
        if fault.drop_after == n:
            assert request.transport is not None
            request.transport.close()
            return response
        if fault.error_after == n:
            error = {"type": "error", "error": {"message": "fake failure mid-stream", "type": "server_error", "code": None, "param": None}}
            await response.write(b"event: error\ndata: " + orjson.dumps(error) + b"\n\n")
            break
        await response.write(b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n")
    await response.write_eof()
    return response


async def speech(request: web.Request, body: JSON, chunk_delay: float) -> web.StreamResponse:
    fmt = body.get("response_format") or "mp3"
    response = web.StreamResponse(headers={"Content-Type": SPEECH_TYPES.get(fmt, "audio/mpeg")})
    response.enable_chunked_encoding()
    await response.prepare(request)
    for n in range(4):
        await response.write(f"AUDIO{n}:".encode() + body.get("input", "").encode()[:64] + b"|")
        if chunk_delay:
            await asyncio.sleep(chunk_delay)
    await response.write_eof()
    return response


def transcription(model: str, response_format: str) -> web.Response:
    if response_format == "text":
        return web.Response(text=TRANSCRIPT + "\n", content_type="text/plain")
    if response_format == "srt":
        srt = f"1\n00:00:00,000 --> 00:00:{AUDIO_SECONDS:06.3f}\n{TRANSCRIPT}\n\n".replace(".", ",")
        return web.Response(text=srt, content_type="text/plain")
    if response_format == "vtt":
        return web.Response(text=f"WEBVTT\n\n00:00:00.000 --> 00:00:{AUDIO_SECONDS:06.3f}\n{TRANSCRIPT}\n\n", content_type="text/plain")
    if response_format == "verbose_json":
        answer: JSON = {"task": "transcribe", "language": "english", "duration": AUDIO_SECONDS, "text": TRANSCRIPT,
                        "segments": [{"id": 0, "start": 0.0, "end": AUDIO_SECONDS, "text": TRANSCRIPT}]}  # fmt: skip
    elif model.startswith("gpt-4o"):
        answer = {"text": TRANSCRIPT, "usage": {"type": "tokens", "input_tokens": 40, "output_tokens": 6, "total_tokens": 46,
                                                "input_token_details": {"audio_tokens": 40, "text_tokens": 0}}}  # fmt: skip
    else:
        answer = {"text": TRANSCRIPT, "usage": {"type": "duration", "seconds": AUDIO_SECONDS}}
    return web.json_response(answer)


async def transcription_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for n, word in enumerate(TRANSCRIPT.split(" ")):
        delta = {"type": "transcript.text.delta", "delta": word if n == 0 else " " + word}
        await response.write(b"data: " + orjson.dumps(delta) + b"\n\n")
    usage = {"type": "tokens", "input_tokens": 40, "output_tokens": 6, "total_tokens": 46}
    await response.write(b"data: " + orjson.dumps({"type": "transcript.text.done", "text": TRANSCRIPT, "usage": usage}) + b"\n\n")
    await response.write_eof()
    return response
