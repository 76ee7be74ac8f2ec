"""CPU time of the gateway's own streaming relay path, isolated from the server,
the network and the load of the machine.

The bench's 20-chunk stream (``bench/fast_upstream.py``: a role chunk, 18 content
deltas, the finish chunk, the usage chunk, ``data: [DONE]``) goes through the real
code: ``upstream.sse_frames`` (splitting, the channel type's frame decoder), the
stream contract, the tally, the client protocol's writer and ``stream_pump.pump``,
with a ``send`` that only keeps the body. The upstream response is a stand-in
with the body's reads (``content.readany``, ``content.iter_any``).

Run: ``.venv/bin/python bench/stream_path.py [--streams 2000] [--repeat 5] [--only TEXT] [--chunks 20]``;
it prints the best CPU time per stream (``time.process_time``) of each case. Under
``valgrind --tool=callgrind`` (``--repeat 1``: a warm-up and one measured pass), two
runs that differ only in ``--streams`` give the instructions of one stream, and two
that differ only in ``--chunks`` those of one more chunk: figures the load does not move.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from aiohttp.streams import AsyncStreamIterator

from gateway_core.channel_type import StreamReply
from gateway_core.client_protocol import Call
from gateway_core.request.stream_contract import StreamContract
from gateway_core.request.stream_pump import pump
from gateway_core.tally import StreamTally
from gateway_core.upstream import sse_frames

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wires import DONE, MODEL, anthropic_stream, gemini_stream, openai_stream  # noqa: E402


def openai_frames(chunks: int = 20) -> list[bytes]:
    """The frames ``bench/fast_upstream.py`` sends, usage asked for."""
    frames, usage = openai_stream(chunks)
    return [*frames, usage, DONE]


class _Content:
    """The body's reads, as aiohttp's ``StreamReader`` gives them (``readany``, and
    ``iter_any`` over it as aiohttp builds it), each at once."""

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = iter(reads)

    async def readany(self) -> bytes:
        return next(self._reads, b"")

    def iter_any(self) -> AsyncStreamIterator[bytes]:
        return AsyncStreamIterator(self.readany)


class _Response:
    """What ``FrameStream`` reads of an aiohttp response."""

    def __init__(self, reads: list[bytes]) -> None:
        self.content = _Content(reads)

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass


async def _send(message) -> None:
    pass


async def one_stream(reads: list[bytes], decoder_factory, writer_factory, channel_type: str) -> None:
    frames = sse_frames(_Response(reads), decoder_factory().decode, max_frame_bytes=1 << 20)  # type: ignore[arg-type]
    reply = StreamReply(frames=frames, close=frames.aclose)
    tally = StreamTally(time.perf_counter())
    error = await pump(reply, StreamContract(channel_type), writer_factory(), tally, _send)
    assert error is None and tally.finished and tally.usage is not None, (error, tally.usage)


def measure(name: str, reads: list[bytes], decoder_factory, writer_factory, channel_type: str, streams: int, repeat: int) -> float:
    loop = asyncio.new_event_loop()

    async def many() -> None:
        for _ in range(streams):
            await one_stream(reads, decoder_factory, writer_factory, channel_type)

    loop.run_until_complete(many())  # warm up
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        loop.run_until_complete(many())
        best = min(best, time.process_time() - start)
    loop.close()
    per_stream = best / streams * 1e6
    print(f"{name:58s} {per_stream:8.1f} us per stream")
    return per_stream


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="run only the cases whose name holds this text")
    parser.add_argument("--chunks", type=int, default=20, help="frames of each stream (the bench's stream: 20)")
    args = parser.parse_args(argv)

    from gateway_openai.chat_stream import FrameDecoder
    from gateway_openai.protocol import OpenAIProtocol

    protocol = OpenAIProtocol()
    call = Call(protocol="openai", endpoint="chat", wire="openai.chat", model=MODEL, stream=True, body={}, options={"include_usage": True})
    frames = openai_frames(args.chunks)
    passthrough, converted = (lambda: protocol.stream_writer(call, True)), (lambda: protocol.stream_writer(call, False))
    cases = {
        "openai chat passthrough, one read per frame": (frames, passthrough),
        "openai chat passthrough, the whole stream in one read": ([b"".join(frames)], passthrough),
        "openai chat converted (ConvertedChunks), one read per frame": (frames, converted),
    }
    for name, (reads, writer) in cases.items():
        if args.only in name:
            measure(name, reads, FrameDecoder, writer, "openai", args.streams, args.repeat)

    from gateway_anthropic.channel import FrameDecoder as AnthropicDecoder
    from gateway_anthropic.protocol import MESSAGES_WIRE, AnthropicProtocol
    from gateway_gemini.channel import FrameDecoder as GeminiDecoder
    from gateway_gemini.protocol import GeminiProtocol

    anthropic_call = Call(protocol="anthropic", endpoint="chat", wire=MESSAGES_WIRE, model=MODEL, stream=True, body={})
    gemini_call = Call(protocol="gemini", endpoint="chat", wire="gemini.generate", model=MODEL, stream=True, body={}, options={"sse": True})
    others = {
        "anthropic passthrough, one read per frame": (anthropic_stream(args.chunks), AnthropicDecoder, AnthropicProtocol(), anthropic_call, "anthropic"),
        "gemini passthrough (alt=sse), one read per frame": (gemini_stream(args.chunks), GeminiDecoder, GeminiProtocol(), gemini_call, "gemini"),
    }
    for name, (reads, decoder, client, client_call, channel_type) in others.items():
        if args.only in name:
            measure(name, reads, decoder, lambda: client.stream_writer(client_call, True), channel_type, args.streams, args.repeat)  # noqa: B023
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
