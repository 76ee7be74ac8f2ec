"""A minimal, fast fake upstream for the benchmark (not for tests), in the three
protocols the bench speaks (``bench/wires.py``).

A raw asyncio protocol on uvloop: HTTP/1.1 keep-alive, requests with a
``Content-Length`` body (what aiohttp sends), each answered in the protocol of its
path: Anthropic's for ``.../messages``, Gemini's for ``...:generateContent`` and
``...:streamGenerateContent``, OpenAI chat's for every other. A non-streaming request
gets one fixed small answer; a streaming one (``"stream": true``, or Gemini's
streaming path) gets ``--chunks`` small frames (``--chunks - 2`` text deltas), with
OpenAI's usage chunk when ``stream_options.include_usage`` is true and its
``data: [DONE]``, in chunked transfer encoding. A body holding
``bench:tokens=N:pace=MS`` (``bench/shapes.py``) gets ``N`` text deltas instead,
written ``MS`` milliseconds apart (a paced stream, as a real model's).

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
from wires import ANTHROPIC, ANTHROPIC_MESSAGE, GEMINI, GEMINI_RESPONSE, OPENAI, OPENAI_COMPLETION, Wire, anthropic_stream, gemini_stream, openai_stream, wire_of_path



def _chunked(frame: bytes) -> bytes:
    """One HTTP/1.1 chunk carrying ``frame``."""
    return b"%x\r\n%s\r\n" % (len(frame), frame)


def stream_frames(wire: Wire, chunks: int) -> tuple[list[bytes], bytes]:
    """A stream's chunked-encoded frames in ``wire``'s protocol, and the usage frame
    sent only when asked (OpenAI's; the others carry their usage in their frames)."""
    if wire is OPENAI:
        frames, usage = openai_stream(chunks)
        return [_chunked(f) for f in frames], _chunked(usage)
    frames = anthropic_stream(chunks) if wire is ANTHROPIC else gemini_stream(chunks)
    return [_chunked(f) for f in frames], b""


def _json_head(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: keep-alive\r\n\r\n" % len(body)


ANSWERS = {OPENAI: OPENAI_COMPLETION, ANTHROPIC: ANTHROPIC_MESSAGE, GEMINI: GEMINI_RESPONSE}
PLAIN = {wire: _json_head(body) + body for wire, body in ANSWERS.items()}
DONE = _chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n"
END = b"0\r\n\r\n"
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
)
BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class Upstream(asyncio.Protocol):
    chunks = 20  # content chunks + 2 of a stream that does not say its length
    shaped: dict[tuple[Wire, int], tuple[list[bytes], bytes]] = {}  # the frames of a stream of N chunks

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
            path = buffer[: buffer.find(b"\r\n")].split(b" ")[1]
            buffer = buffer[body_end:]
            self.answer(wire_of_path(path.partition(b"?")[0]), path, body)
        self.buffer = buffer

    def answer(self, wire: Wire, path: bytes, body: bytes) -> None:
        write = self.transport.write
        usage_asked = False
        if wire is GEMINI:
            stream = b":streamGenerateContent" in path
        elif b'"stream"' not in body:
            stream = False
        else:
            request = orjson.loads(body)
            stream = request.get("stream") is True
            options = request.get("stream_options")
            usage_asked = isinstance(options, dict) and options.get("include_usage") is True
        if not stream:
            write(PLAIN[wire])
            return
        tokens, pace = stream_request(body)
        length = self.chunks if tokens is None else tokens + 2
        if (wire, length) not in self.shaped:
            self.shaped[(wire, length)] = stream_frames(wire, length)
        frames, usage_frame = self.shaped[(wire, length)]
        frames = [SSE_HEAD, *frames]
        if usage_asked and usage_frame:
            frames.append(usage_frame)
        frames.append(DONE if wire is OPENAI else END)
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
    Upstream.chunks = args.chunks
    try:
        import uvloop

        uvloop.run(serve(args.host, args.port))
    except ImportError:
        asyncio.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
