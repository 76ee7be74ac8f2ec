"""``/v1/audio/speech`` and ``/v1/audio/transcriptions`` through the official ``openai``
SDK over real HTTP: speech audio relayed as it arrives under its content type, the
audio file streamed to the upstream with its fields intact, every response format
passed through."""

from __future__ import annotations

import hashlib
import time

import openai
import pytest

from gateway_openai.fake_media import AUDIO_SECONDS, TRANSCRIPT
from gateway_openai.fake_upstream import Fault

TTS, TTS_UP = "tts-test", "gpt-4o-mini-tts"
WHISPER, WHISPER_UP = "whisper-test", "whisper-1"
TRANSCRIBE = "gpt-4o-transcribe"
CLAUDE = "claude-test"
AUDIO = b"ID3" + bytes(range(256)) * 64


@pytest.fixture
def gateway_key(seed, upstream):
    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("oai", type="openai", base_url=upstream.url, models=[TTS, WHISPER, TRANSCRIBE],
                 model_map={TTS: TTS_UP, WHISPER: WHISPER_UP})  # fmt: skip
    seed.channel("claude", type="anthropic", base_url="http://127.0.0.1:9", models=[CLAUDE])
    return secret


@pytest.fixture
def client(start_gateway, gateway_key):
    gateway = start_gateway()
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)


async def test_speech_streams_to_a_file_with_the_upstreams_content_type(client, upstream, tmp_path, seed):
    upstream.chunk_delay = 0.2  # four chunks: the whole answer takes about 0.8 s
    target = tmp_path / "speech.mp3"
    started = time.monotonic()
    async with client.audio.speech.with_streaming_response.create(model=TTS, voice="alloy", input="Hello there") as response:
        assert response.headers["content-type"] == "audio/mpeg"
        first_at = None
        chunks = []
        async for chunk in response.iter_bytes():
            first_at = first_at or time.monotonic() - started
            chunks.append(chunk)
    target.write_bytes(b"".join(chunks))
    assert target.read_bytes() == b"".join(f"AUDIO{n}:Hello there|".encode() for n in range(4))
    assert first_at < 0.5 < time.monotonic() - started
    received = upstream.requests[-1]
    assert received["path"] == "/v1/audio/speech" and received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    assert received["body"] == {"model": TTS_UP, "voice": "alloy", "input": "Hello there"}
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["status"], row["end_reason"], row["stream"], row["upstream_model"]) == ("audio.speech", 200, "done", 1, TTS_UP)


async def test_speech_stream_to_file_helper_and_wav(client, tmp_path):
    target = tmp_path / "speech.wav"
    async with client.audio.speech.with_streaming_response.create(model=TTS, voice="nova", input="Hi", response_format="wav") as response:
        assert response.headers["content-type"] == "audio/wav"
        await response.stream_to_file(target)
    assert target.read_bytes().startswith(b"AUDIO0:Hi|")


async def test_speech_upstream_error_before_audio_is_an_error(client, upstream):
    upstream.fail_next(Fault(status=400, body={"error": {"message": "voice unknown", "type": "invalid_request_error", "param": "voice", "code": None}}))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.speech.create(model=TTS, voice="nobody", input="x")
    assert "voice unknown" in caught.value.message


@pytest.mark.parametrize("response_format", ["json", "verbose_json", "text", "srt", "vtt"])
async def test_transcription_streams_the_file_and_passes_every_format_through(client, upstream, tmp_path, response_format, seed):
    audio = tmp_path / "talk.mp3"
    audio.write_bytes(AUDIO)
    result = await client.audio.transcriptions.create(model=WHISPER, file=audio.open("rb"), response_format=response_format, language="en")
    text = result if isinstance(result, str) else result.text
    assert TRANSCRIPT in text
    if response_format == "srt":
        assert "00:00:12,500" in text
    if response_format == "verbose_json":
        assert result.duration == AUDIO_SECONDS
    received = upstream.requests[-1]
    assert received["path"] == "/v1/audio/transcriptions" and received["headers"]["Authorization"] == "Bearer sk-upstream-test"
    form = received["body"]
    assert form["fields"] == {"model": WHISPER_UP, "language": "en", "response_format": response_format}
    assert form["files"] == [{"field": "file", "filename": "talk.mp3", "content_type": "audio/mpeg", "size": len(AUDIO),
                              "sha256": hashlib.sha256(AUDIO).hexdigest()}]  # fmt: skip
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["status"], row["upstream_model"]) == ("audio.transcriptions", 200, WHISPER_UP)
    assert row["estimated"] == (1 if response_format == "text" else 0)  # plain text says nothing of the length


async def test_transcription_with_token_usage(client, seed):
    result = await client.audio.transcriptions.create(model=TRANSCRIBE, file=("a.wav", AUDIO, "audio/wav"))
    assert result.usage.input_tokens == 40
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["input_tokens"], row["output_tokens"], row["estimated"]) == (40, 6, 0)


async def test_streamed_transcription(client, seed):
    stream = await client.audio.transcriptions.create(model=TRANSCRIBE, file=("a.wav", AUDIO, "audio/wav"), stream=True)
    events = [event async for event in stream]
    assert "".join(e.delta for e in events if e.type == "transcript.text.delta") == TRANSCRIPT
    assert events[-1].type == "transcript.text.done" and events[-1].usage.input_tokens == 40
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["stream"], row["end_reason"], row["input_tokens"], row["output_tokens"]) == (1, "done", 40, 6)


async def test_audio_for_a_model_without_an_audio_channel_is_404(client):
    with pytest.raises(openai.NotFoundError) as caught:
        await client.audio.speech.create(model=CLAUDE, voice="alloy", input="x")
    assert caught.value.code == "unsupported_endpoint" and "audio.speech" in caught.value.message
    with pytest.raises(openai.NotFoundError) as caught:
        await client.audio.transcriptions.create(model=CLAUDE, file=("a.wav", AUDIO, "audio/wav"))
    assert caught.value.code == "unsupported_endpoint"
