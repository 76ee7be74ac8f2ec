"""A minimal, fast fake OpenAI upstream for the benchmark (not for tests).

A raw asyncio protocol on uvloop: HTTP/1.1 keep-alive, requests with a
``Content-Length`` body (what aiohttp sends), every path answered as
``POST /v1/chat/completions``. A non-streaming request gets one fixed small
``chat.completion``; ``"stream": true`` gets ``--chunks`` small ``data:`` chunks
(role, text deltas, finish), a usage chunk when ``stream_options.include_usage``
is true, then ``data: [DONE]``, in chunked transfer encoding. A body whose ``user``
field reads ``bench:tokens=N:pace=MS`` (``bench/shapes.py``) gets ``N`` content chunks
instead, written ``MS`` milliseconds apart (a paced stream, as a real model's).

Run: ``python bench/fast_upstream.py --port 9001 [--chunks 20]``; it prints
``ready`` on stdout once listening and stops on SIGTERM/SIGINT. It does as
little as it can per request so that it is never the bottleneck: the
gateway's test fake (``gateway_openai.fake_upstream``) is the faithful one.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

import orjson

from shapes import stream_request

MODEL = "bench-model"
CREATED = 1_700_000_000
COMPLETION = orjson.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": CREATED,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello from the bench upstream.", "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
        "system_fingerprint": "fp_bench",
    }
)


def chunk_frame(delta: dict, finish: str | None = None, usage: dict | None = None, choices: bool = True) -> bytes:
    payload = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
    }
    if usage is not None:
        payload["usage"] = usage
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _chunked(frame: bytes) -> bytes:
    """One HTTP/1.1 chunk carrying ``frame``."""
    return b"%x\r\n%s\r\n" % (len(frame), frame)


def stream_frames(chunks: int) -> tuple[list[bytes], bytes]:
    """The stream's chunked-encoded frames, and the usage frame (sent only when asked)."""
    frames = [chunk_frame({"role": "assistant", "content": ""})]
    frames += [chunk_frame({"content": f"tok{i} "}) for i in range(max(0, chunks - 2))]
    frames.append(chunk_frame({}, finish="stop"))
    usage = chunk_frame({}, usage={"prompt_tokens": 12, "completion_tokens": max(0, chunks - 2), "total_tokens": 12 + max(0, chunks - 2)}, choices=False)
    return [_chunked(f) for f in frames], _chunked(usage)


DONE = _chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n"
JSON_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
    b"Connection: keep-alive\r\n\r\n" % len(COMPLETION)
)
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
)
BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class Upstream(asyncio.Protocol):
    frames: list[bytes] = []
    usage_frame: bytes = b""
    shaped: dict[int, tuple[list[bytes], bytes]] = {}  # the frames of a stream of N content chunks

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = b""

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buffer[:end].lower()
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                length = 0
                if b"transfer-encoding" in head:  # not what the bench sends
                    self.transport.write(BAD)
                    self.transport.close()
                    return
            else:
                stop = head.find(b"\r\n", at + 2)
                length = int(head[at + 17 : stop if stop >= 0 else len(head)])
            body_end = end + 4 + length
            if len(buffer) < body_end:
                break
            body = buffer[end + 4 : body_end]
            buffer = buffer[body_end:]
            self.answer(body)
        self.buffer = buffer

    def answer(self, body: bytes) -> None:
        write = self.transport.write
        if b'"stream"' not in body:
            write(JSON_HEAD + COMPLETION)
            return
        request = orjson.loads(body)
        if request.get("stream") is not True:
            write(JSON_HEAD + COMPLETION)
            return
        options = request.get("stream_options")
        tokens, pace = stream_request(request.get("user"))
        frames, usage_frame = self.frames, self.usage_frame
        if tokens is not None:
            if tokens not in self.shaped:
                self.shaped[tokens] = stream_frames(tokens + 2)
            frames, usage_frame = self.shaped[tokens]
        frames = [SSE_HEAD, *frames]
        if isinstance(options, dict) and options.get("include_usage") is True:
            frames.append(usage_frame)
        frames.append(DONE)
        if not pace:
            for frame in frames:  # one write per frame: separate segments, as a real upstream's
                write(frame)
            return
        loop, transport = asyncio.get_running_loop(), self.transport
        step = pace / 1000
        # the head and the first chunk at once, then one chunk per ``pace``; the last two
        # (the finish or the usage, and [DONE]) together. Each write schedules the next, so
        # the order holds however late the loop runs
        rest = [*frames[2:-2], frames[-2] + frames[-1]]
        rest.reverse()

        def later() -> None:
            if transport.is_closing():
                return
            transport.write(rest.pop())
            if rest:
                loop.call_later(step, later)

        write(frames[0] + frames[1])
        loop.call_later(step, later)


async def serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Upstream, host, port, backlog=1024, reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=20, help="data: chunks per stream before [DONE] (default 20)")
    args = parser.parse_args(argv)
    Upstream.frames, Upstream.usage_frame = stream_frames(args.chunks)
    try:
        import uvloop

        uvloop.run(serve(args.host, args.port))
    except ImportError:
        asyncio.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
